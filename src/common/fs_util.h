// Atomic file output: write to a temporary file beside the target, fsync, rename into place.
// A crash leaves either the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace leap {

// A file written piece by piece and put in place atomically: the pieces go to a temporary file
// beside `path`; commit() fsyncs it and renames it over `path`. Dropped without commit() (an
// error on the way), the temporary file is removed and `path` is untouched. For outputs too
// large to assemble in memory first (a model's weights).
class AtomicWriter {
 public:
  explicit AtomicWriter(std::string path);
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;
  Status append(const void* data, size_t n);
  Status commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  Status error_;  // the first failure (open or write); append and commit report it
};

Status write_file_atomic(const std::string& path, std::string_view contents);
// Flushes a folder's entries (renames into it, new files) to disk, so that a power loss after a
// rename cannot bring back the old name; best effort (some file systems refuse fsync on a folder,
// and a process crash never needs it).
void sync_folder(const std::string& dir);
Expected<std::string> read_file(const std::string& path);
// For an output file the user named with `flag`: invalid_input when its folder does not exist
// (the user's to create), so commands fail before any work rather than after it.
Status check_output_folder(const std::string& path, const std::string& flag);
// For an output folder the user named with `flag`, made with its missing parents when it is
// written: invalid_input when the nearest part of it that exists is not a folder this process
// may write into. Creates nothing.
Status check_folder_creatable(const std::string& path, const std::string& flag);

}  // namespace leap
