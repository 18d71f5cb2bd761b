// Launch plans: an Answer's launch and scratch lines evaluated over one param set (a task's
// `params` or `cpu_params`). Every size and dimension is checked against PlanLimits here, before
// anything is compiled or run, so a hostile launch line cannot allocate or spin up anything big.
// A failure is the answer's fault: LAUNCH_ERROR, with a message naming the line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "sandbox/answer.h"
#include "tasks/task.h"

namespace leap::sandbox {

struct PlanLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_block_dim[3] = {1024, 1024, 64};
  int64_t max_grid_dim[3] = {2147483647, 65535, 65535};
  int64_t max_blocks_per_launch = int64_t{1} << 24;
  int64_t max_dynamic_shared_bytes = 48 * 1024;    // without the opt-in attribute (docs/design.md)
  int64_t max_scratch_bytes = int64_t{256} << 20;  // all scratch buffers together
  int max_launches = 16;
};

// One kernel argument, resolved against the task and the scratch list.
struct PlanArg {
  enum class Kind { kBuffer, kScratch, kInt, kFloat };
  Kind kind = Kind::kInt;
  std::string text;  // as written, for messages
  int index = 0;     // kBuffer: into Task::buffers; kScratch: into LaunchPlan::scratch
  int64_t int_value = 0;
  double float_value = 0;
};

struct PlannedScratch {
  std::string name;
  tasks::DType dtype = tasks::DType::kF32;
  int64_t count = 0;
  size_t bytes = 0;
};

struct PlannedLaunch {
  int line = 0;
  std::string kernel;  // the name expression: "k" or "k<128>"
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  std::vector<PlanArg> args;
};

struct LaunchPlan {
  std::vector<PlannedScratch> scratch;
  std::vector<PlannedLaunch> launches;
};

// Evaluates `answer` over `params` (integer expressions through tasks::eval_int_expr). Names are
// looked up as a buffer of `task`, then a scratch buffer, then a float param; anything else is an
// integer expression (a float literal like 0.5f is a float argument).
Expected<LaunchPlan> make_launch_plan(const Answer& answer, const tasks::Task& task,
                                      const tasks::Params& params, const PlanLimits& limits);

}  // namespace leap::sandbox
