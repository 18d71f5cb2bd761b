// What `leap eval` hands back: the metrics over all evaluated tasks, per split and per task
// family, and per task, as a JSON document (with every turn-sample's record, so that each
// aggregate can be recomputed from it) and as the table printed on stdout.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rl/eval_metrics.h"
#include "tasks/suite.h"

namespace leap::app {

// Facts of the run that the report restates.
struct EvalRunInfo {
  std::string model, suite, split, device;
  int64_t seed = 0;
  int batch_tasks = 0;
  double temperature = 1, top_p = 1;
  int max_new_tokens = 0;
  double time_s = 0;
  std::string config_ini;  // the fully resolved config
};

// by_split's entry for the held-out tasks the suite does not mark as seen in train
// (Task::seen_in_train); present only when it marks some of those evaluated and not all.
inline constexpr const char* kHeldoutClean = "heldout_clean";

struct EvalBreakdown {
  std::vector<rl::TaskTally> tasks;  // in the order evaluated
  std::vector<rl::EvalSummary> per_task;  // aligned with `tasks`
  rl::EvalSummary overall;
  std::map<std::string, rl::EvalSummary> by_split, by_family;
};

EvalBreakdown break_down(const tasks::Suite& suite, const std::vector<int>& tasks,
                         const std::vector<rl::EvalRecord>& records, const rl::EvalSpec& spec);

nlohmann::json eval_json(const tasks::Suite& suite, const EvalBreakdown& b,
                         const std::vector<rl::EvalRecord>& records, const rl::EvalSpec& spec,
                         const EvalRunInfo& info);

// The table: one row for all tasks, one per split and per family, then one per task.
std::string eval_table(const tasks::Suite& suite, const EvalBreakdown& b, const rl::EvalSpec& spec,
                       const EvalRunInfo& info);

}  // namespace leap::app
