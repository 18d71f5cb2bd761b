// Atomic writes (temp file + fsync + rename) and whole-file reads with clear errors.
#include "common/fs_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace leap {

Status write_file_atomic(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error("cannot write '" + tmp + "': " + std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return io_error("cannot flush '" + tmp + "': " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
  return Status::ok();
}

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error("cannot read '" + path + "'");
  return ss.str();
}

Status check_output_folder(const std::string& path, const std::string& flag) {
  if (path.empty()) return Status::ok();
  const auto folder = std::filesystem::absolute(path).parent_path();
  if (std::filesystem::is_directory(folder)) return Status::ok();
  return invalid_input(flag + " " + path + ": the folder " + folder.string() +
                       " does not exist; create it first or give another " + flag);
}

}  // namespace leap
