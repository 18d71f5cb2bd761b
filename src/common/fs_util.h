// Atomic file output: write to a temporary file beside the target, fsync, rename into place.
// A crash leaves either the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace leap {

Status write_file_atomic(const std::string& path, std::string_view contents);
Expected<std::string> read_file(const std::string& path);
// For an output file the user named with `flag`: invalid_input when its folder does not exist
// (the user's to create), so commands fail before any work rather than after it.
Status check_output_folder(const std::string& path, const std::string& flag);

}  // namespace leap
