// Runs one job on an executor, inside a worker process: compile once, then per trial generate
// inputs, lay out buffers (with guard zones where the executor asks for them), poison outputs
// with NaN, run the launch plan, check guards and that `in` buffers are unchanged, and read the
// outputs back. The first failure ends the job with the candidate's verdict.
//
// A trial's inputs are a pure function of the task's buffers and sizes, the seed and the trial,
// and every candidate of a task (a group's G samples, their later turns, the reference itself)
// runs the same trials: a worker keeps the inputs it generated in an LRU cache of
// `input_cache_bytes` (sandbox.input_cache_mb), so that on a GPU, where one trial's inputs are
// tens of millions of values drawn on the host, a task's later jobs on the worker skip that.
// Inputs are drawn on `input_threads` threads (the values do not depend on it: tasks/inputs.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/job.h"
#include "sandbox/lru_cache.h"

namespace leap::sandbox {

// A trial's buffers, in the task's order: the cached inputs themselves and the job's own
// poisoned outputs, so that no input is copied per job.
using BufferRefs = std::vector<const tasks::BufferData*>;

class JobRunner {
 public:
  explicit JobRunner(Executor& executor, TimingOptions timing = {}, size_t input_cache_bytes = 0,
                     int input_threads = 1)
      : executor_(executor), timing_(timing), inputs_(input_cache_bytes), input_threads_(input_threads) {}
  JobReport run(const JobRequest& request);
  // The trial's inputs: from the cache, or generated (tasks::generate_inputs) and cached. `out`
  // buffers come without bytes (they would be zeros: a job sizes and poisons its own).
  Expected<std::shared_ptr<const std::vector<tasks::BufferData>>> trial_inputs(const tasks::Task& task,
                                                                               const TrialSpec& trial);
  uint64_t input_cache_hits() const { return inputs_.hits(); }
  // Called once the candidate has compiled (successfully or not), before any trial runs: the
  // worker tells the supervisor, whose run timeout starts then.
  void set_compiled_callback(std::function<void()> callback) { on_compiled_ = std::move(callback); }
  // The supervisor's run timeout (sandbox.run_timeout_s), which starts when the candidate has
  // compiled: the executor may wait for the device for half of it (Executor::set_deadline).
  void set_run_timeout(double seconds) { run_timeout_s_ = seconds; }

 private:
  // Times the task's reference on the trial's inputs and caches it under `key`.
  ExecOutcome time_reference(const JobRequest& request, const tasks::Params& params, const BufferRefs& inputs,
                             const std::string& key);

  Executor& executor_;
  TimingOptions timing_;
  std::function<void()> on_compiled_;
  std::map<std::string, double> reference_ms_;  // task id + sizes -> median reference time
  LruCache<std::shared_ptr<const std::vector<tasks::BufferData>>> inputs_;
  int input_threads_ = 1;
  double run_timeout_s_ = 0;  // 0: no deadline
};

}  // namespace leap::sandbox
