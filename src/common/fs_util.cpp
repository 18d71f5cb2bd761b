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

AtomicWriter::AtomicWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) error_ = io_error("cannot create '" + tmp_ + "': " + std::strerror(errno));
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

Status AtomicWriter::append(const void* data, size_t n) {
  if (!error_) return error_;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = io_error("cannot write '" + tmp_ + "': " + std::strerror(errno));
      return error_;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::ok();
}

Status AtomicWriter::commit() {
  if (!error_) return error_;
  const int fd = fd_;
  fd_ = -1;
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;  // closed whatever fsync said
  if (synced != 0 || closed != 0) {
    ::unlink(tmp_.c_str());
    return io_error("cannot flush '" + tmp_ + "': " + std::strerror(synced != 0 ? synced : closed));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return io_error("cannot rename '" + tmp_ + "' to '" + path_ + "': " + std::strerror(err));
  }
  sync_folder(std::filesystem::path(path_).parent_path().string());
  return Status::ok();
}

void sync_folder(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

Status write_file_atomic(const std::string& path, std::string_view contents) {
  AtomicWriter w(path);
  LEAP_RETURN_IF_ERROR(w.append(contents.data(), contents.size()));
  return w.commit();
}

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error("cannot read '" + path + "'");
  return ss.str();
}

Status check_folder_creatable(const std::string& path, const std::string& flag) {
  if (path.empty()) return Status::ok();
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return invalid_input(flag + " " + path + ": " + ec.message());
  while (p.has_parent_path() && p != p.parent_path() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  if (std::filesystem::is_directory(p, ec) && ::access(p.c_str(), W_OK) == 0) return Status::ok();
  return invalid_input(flag + " " + path + ": cannot be created, " + p.string() +
                       " is not a folder this process may write into; give another " + flag);
}

Status check_output_folder(const std::string& path, const std::string& flag) {
  if (path.empty()) return Status::ok();
  const auto folder = std::filesystem::absolute(path).parent_path();
  if (std::filesystem::is_directory(folder)) return Status::ok();
  return invalid_input(flag + " " + path + ": the folder " + folder.string() +
                       " does not exist; create it first or give another " + flag);
}

}  // namespace leap
