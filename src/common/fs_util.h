// Atomic file output: write to a temporary file beside the target, fsync, rename into place.
// A crash leaves either the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace leap {

Status write_file_atomic(const std::string& path, std::string_view contents);
Expected<std::string> read_file(const std::string& path);

}  // namespace leap
