// A sandbox job: what a worker is asked to run, and what it reports back. The worker never sees
// reference outputs: it returns the candidate's outputs and the supervisor compares them
// (docs/design.md, Verification: the candidate's process never holds the reference's outputs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/executor.h"
#include "sandbox/launch_plan.h"
#include "tasks/inputs.h"
#include "tasks/task.h"

namespace leap::sandbox {

// One trial: inputs generated from (seed, trial) under the task's GPU or CPU sizes.
struct TrialSpec {
  uint64_t seed = 0;
  uint64_t trial = 0;
  tasks::SizeSet sizes = tasks::SizeSet::kCpu;
};

struct JobRequest {
  uint64_t id = 0;
  tasks::Task task;
  std::string code;  // the answer's code block (candidate or the task's reference)
  std::vector<TrialSpec> trials;
  PlanLimits limits;
  // GPU only: time the plan on the first trial's inputs, and the task's reference on the same
  // inputs (the worker caches reference times per task and sizes).
  bool time = false;
};

struct JobReport {
  ExecOutcome outcome;    // the first failure, or kOk when every trial ran cleanly
  int failed_trial = -1;  // index into JobRequest::trials of the failure, if any
  double compile_ms = 0;
  double exec_ms = 0;  // wall time of the launches, all trials together
  bool compile_cache_hit = false;
  // Per trial (when outcome is OK): the `out` and `inout` buffers after the run.
  std::vector<std::vector<tasks::BufferData>> outputs;
  std::optional<double> candidate_ms;  // median time of the plan (GPU, when timed)
  std::optional<double> reference_ms;
  // Set by the worker when its executor broke (a sticky device error): it exits after this
  // report, and the supervisor replaces it at once.
  bool worker_exiting = false;
};

}  // namespace leap::sandbox
