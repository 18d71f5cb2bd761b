// Where the verifier sends jobs: to a worker pool (separate processes; the production path) or
// to a JobRunner in this process (tests and tools that need no isolation). Implementations are
// thread-safe: the verifier is called from many threads at once.
#pragma once

#include <memory>
#include <mutex>

#include "sandbox/job.h"
#include "sandbox/job_runner.h"

namespace leap::sandbox {

class JobChannel {
 public:
  virtual ~JobChannel() = default;
  virtual JobReport run(const JobRequest& request) = 0;
  // True when jobs run on a GPU: trials use the GPU sizes (one the CPU sizes) and are timed.
  virtual bool on_gpu() const = 0;
};

// Runs jobs on one executor in this process, one at a time. No isolation: a crash of the
// executor is a crash of the caller.
class LocalChannel final : public JobChannel {
 public:
  explicit LocalChannel(std::unique_ptr<Executor> executor)
      : executor_(std::move(executor)), runner_(*executor_) {}
  JobReport run(const JobRequest& request) override {
    std::lock_guard lock(mutex_);
    return runner_.run(request);
  }
  bool on_gpu() const override { return executor_->can_time(); }

 private:
  std::mutex mutex_;
  std::unique_ptr<Executor> executor_;
  JobRunner runner_;
};

}  // namespace leap::sandbox
