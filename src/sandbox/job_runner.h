// Runs one job on an executor, inside a worker process: compile once, then per trial generate
// inputs, lay out buffers (with guard zones where the executor asks for them), poison outputs
// with NaN, run the launch plan, check guards and that `in` buffers are unchanged, and read the
// outputs back. The first failure ends the job with the candidate's verdict.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sandbox/job.h"

namespace leap::sandbox {

class JobRunner {
 public:
  explicit JobRunner(Executor& executor, TimingOptions timing = {})
      : executor_(executor), timing_(timing) {}
  JobReport run(const JobRequest& request);
  // Called once the candidate has compiled (successfully or not), before any trial runs: the
  // worker tells the supervisor, whose run timeout starts then.
  void set_compiled_callback(std::function<void()> callback) { on_compiled_ = std::move(callback); }

 private:
  // Times the task's reference on the trial's inputs and caches it under `key`.
  ExecOutcome time_reference(const JobRequest& request, const tasks::Params& params,
                             const std::vector<tasks::BufferData>& inputs, const std::string& key);

  Executor& executor_;
  TimingOptions timing_;
  std::function<void()> on_compiled_;
  std::map<std::string, double> reference_ms_;  // task id + sizes -> median reference time
};

}  // namespace leap::sandbox
