// See device_lock.h. A wait with a deadline polls flock(LOCK_NB) every few milliseconds: flock
// has no timed form, and a signal-based timeout would disturb the worker's own timers.
#include "cuda/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace leap::cuda {

DeviceLock::DeviceLock(const std::string& pci_bus_id, const std::string& dir) {
  std::string name = pci_bus_id;
  for (char& c : name)
    if (c == ':' || c == '.' || c == '/') c = '_';
  path_ = dir + "/leap-sandbox-gpu-" + name + ".lock";
  // flock needs no write access: a file another user (or root) created stays usable read-only.
  // It is created world-writable whatever the umask, so that ranks of other users can share it;
  // O_CREAT on another user's file in a sticky /tmp fails under fs.protected_regular, so an
  // existing file is opened without it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0 && errno == ENOENT) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ >= 0) ::fchmod(fd_, 0666);
  }
  if (fd_ < 0) open_error_ = std::strerror(errno);
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool DeviceLock::shared(Deadline deadline) { return take(LOCK_SH, deadline); }
bool DeviceLock::exclusive(Deadline deadline) { return take(LOCK_EX, deadline); }

void DeviceLock::release() {
  if (fd_ >= 0 && held_) ::flock(fd_, LOCK_UN);
  held_ = false;
}

bool DeviceLock::take(int op, Deadline deadline) {
  if (fd_ < 0 || (held_ && mode_ == op)) return true;  // kept across the launches of one plan
  release();  // flock converts non-atomically anyway: be explicit
  // Another error than a held lock (none is expected of an open file) leaves the advisory lock
  // untaken rather than stopping the job.
  if (deadline == Deadline::max()) {
    while (::flock(fd_, op) != 0) {
      if (errno != EINTR) return true;
    }
  } else {
    for (;;) {
      if (::flock(fd_, op | LOCK_NB) == 0) break;
      if (errno != EWOULDBLOCK && errno != EINTR) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  held_ = true;
  mode_ = op;
  return true;
}

}  // namespace leap::cuda
