// See device_lock.h. A wait with a deadline polls flock(LOCK_NB) every few milliseconds: flock
// has no timed form, and a signal-based timeout would disturb the worker's own timers.
//
// flock does not queue: a timer polling for the exclusive lock could wait forever while workers
// with device work keep taking it shared. So a second file, the gate, gives a waiting timer
// priority: a timer holds the gate exclusively while it waits for the lock, and a shared taker
// passes the gate (takes it shared, then drops it) before it takes the lock, so no new shared
// holder gets in while a timer waits; those already in finish and let go.
#include "cuda/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace leap::cuda {

namespace {

// Opens (creating when missing) a lock file read-only: flock needs no write access, so a file
// another user (or root) created stays usable. It is created world-writable whatever the umask,
// so that ranks of other users can share it; O_CREAT on another user's file in a sticky /tmp
// fails under fs.protected_regular, so an existing file is opened without it, and a creation
// that lost a race to another user's is retried that way. -1 with errno on failure.
int open_lock_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0 || errno != ENOENT) return fd;
  fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) {
    ::fchmod(fd, 0666);
    return fd;
  }
  return errno == EEXIST ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
}

// flock(fd, op) by the deadline: 0 when taken; 1 when the deadline passed first; -1 when flock
// fails otherwise (the lock is then advisory and left untaken).
int lock_by(int fd, int op, DeviceLock::Deadline deadline) {
  if (deadline == DeviceLock::Deadline::max()) {
    while (::flock(fd, op) != 0)
      if (errno != EINTR) return -1;
    return 0;
  }
  for (;;) {
    if (::flock(fd, op | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

DeviceLock::DeviceLock(const std::string& pci_bus_id, const std::string& dir) {
  std::string name = pci_bus_id;
  for (char& c : name)
    if (c == ':' || c == '.' || c == '/') c = '_';
  path_ = dir + "/leap-sandbox-gpu-" + name + ".lock";
  fd_ = open_lock_file(path_);
  if (fd_ < 0) {
    open_error_ = std::strerror(errno);
    return;
  }
  gate_fd_ = open_lock_file(path_ + ".gate");  // without it, no priority for timers
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);
  if (gate_fd_ >= 0) ::close(gate_fd_);
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
  // Through the gate first: a timer holds it while it waits; a shared taker only passes it.
  bool gated = false;
  if (gate_fd_ >= 0) {
    const int g = lock_by(gate_fd_, op, deadline);
    if (g == 1) return false;
    gated = g == 0;
  }
  // Another error than a held lock (none is expected of an open file) leaves the advisory lock
  // untaken rather than stopping the job.
  const int r = lock_by(fd_, op, deadline);
  if (gated) ::flock(gate_fd_, LOCK_UN);
  if (r == 1) return false;
  if (r == 0) {
    held_ = true;
    mode_ = op;
  }
  return true;
}

}  // namespace leap::cuda
