// DeviceLock: an advisory lock per GPU, shared across this machine's sandbox worker processes:
// held shared while a job's kernels run, exclusive while one is timed, so that no kernel shares
// the device with a timed one. Keyed by the PCI bus id, so ranks that see the same GPU under
// different indices (their CUDA_VISIBLE_DEVICES differ) share one lock, and different GPUs never
// do. Plain POSIX (flock), so it is built and tested without CUDA.
//
// A wait has a deadline: a hung kernel of another job holds the lock until its worker is killed
// at that job's run timeout, and a job waiting behind it must not run into its own timeout and
// be judged TIMEOUT for it. Past the deadline the wait gives up and the job answers
// SANDBOX_ERROR (the infrastructure's fault, retried), never a verdict on the candidate.
//
// A waiting timer has priority: once it waits, no new shared holder gets in (a second file, the
// gate), so a busy GPU's stream of shared work cannot keep a timer out until its deadline.
#pragma once

#include <chrono>
#include <string>

namespace leap::cuda {

class DeviceLock {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // The lock file is DIR/leap-sandbox-gpu-<bus id>.lock (created if missing, mode 0666 whatever
  // the umask, and opened read-only: ranks of other users share it).
  explicit DeviceLock(const std::string& pci_bus_id, const std::string& dir = "/tmp");
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  // Take the lock in that mode (kept if already held so), waiting at most until `deadline`;
  // false when the deadline passed first (the lock is then not held). Without a lock file
  // (it could not be opened), or when flock fails otherwise, both succeed at once without
  // holding it: the lock is advisory.
  bool shared(Deadline deadline = Deadline::max());
  bool exclusive(Deadline deadline = Deadline::max());
  void release();
  bool held() const { return held_; }
  // Why the lock file could not be opened (then nothing is ever locked); empty when it is open.
  const std::string& unusable_reason() const { return open_error_; }
  const std::string& path() const { return path_; }

 private:
  bool take(int op, Deadline deadline);
  std::string path_;
  std::string open_error_;
  int fd_ = -1;
  int gate_fd_ = -1;  // path_ + ".gate": gives a waiting timer priority (device_lock.cpp)
  bool held_ = false;
  int mode_ = 0;
};

}  // namespace leap::cuda
