// See device_lock.h. A wait with a deadline polls flock(LOCK_NB) every few milliseconds: flock
// has no timed form, and a signal-based timeout would disturb the worker's own timers.
#include "cuda/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace leap::cuda {

DeviceLock::DeviceLock(const std::string& pci_bus_id, const std::string& dir) {
  std::string name = pci_bus_id;
  for (char& c : name)
    if (c == ':' || c == '.' || c == '/') c = '_';
  const std::string path = dir + "/leap-sandbox-gpu-" + name + ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
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
