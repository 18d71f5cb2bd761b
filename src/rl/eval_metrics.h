// The metrics of an evaluation (`leap eval`), from one record per generated turn-sample:
// - pass@k on turn-1 samples, by the unbiased estimator of Chen et al. 2021 (n samples, c
//   correct: 1 - C(n-c, k) / C(n, k)), and the same "by turn t" (a sample counts as correct
//   when one of its first t turns passed);
// - Acc@t, the multi-turn accuracy of Kevin and Dr. Kernel: the fraction of a task's samples
//   correct by turn t, with the sandbox's feedback shown between turns (Acc@t = pass@1 by turn t);
// - fast_p (KernelBench): the fraction of samples correct by turn t whose passing kernel was
//   faster than the task's reference by more than p; only where the sandbox timed kernels.
// Every aggregate is a mean over tasks of a per-task number, so a task's weight does not depend
// on how many turns its samples took. Pure counting with no I/O: the JSON report carries the
// records, so every number can be recomputed from them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/verdict.h"

namespace leap::rl {

// The unbiased pass@k estimator for n samples of which c are correct (0 <= c <= n, 1 <= k <= n),
// in the product form 1 - prod_{i=n-c+1..n} (1 - k/i), which needs no large binomials.
double pass_at_k(int n, int c, int k);

struct EvalRecord {
  int task = 0;    // index into the suite
  int sample = 0;  // 0..n-1 within the task
  int turn = 1;
  sandbox::Verdict verdict = sandbox::Verdict::kSandboxError;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::optional<double> speedup;  // reference time / candidate time, where the sandbox timed it
  std::string completion;         // the answer's text, and the sandbox's feedback on it, so a
  std::string feedback;           // failure can be read from the report without rerunning
};

struct EvalSpec {
  int samples = 8;         // n per task
  int turns = 3;           // turns a sample may take
  std::vector<int> ks;     // pass@k for each k (1 <= k <= samples)
  std::vector<double> ps;  // fast_p for each p
  bool timed = false;      // the sandbox timed kernels (GPU): fast_p is defined only then
};

using sandbox::VerdictCounts;

// One task's counts.
struct TaskTally {
  int task = 0;
  std::vector<int> correct_by_turn;             // [t-1]: samples with an OK at a turn <= t
  std::vector<std::vector<int>> fast_by_turn;   // [p][t-1]: of those, passing turn's speedup > p
  std::vector<VerdictCounts> verdicts_by_turn;  // [t-1][verdict]: turn-samples
  // [t-1]: samples that had not passed but did not get turn t because its prompt did not fit the
  // context (turn 1: no record at all; later: a failure at turn t - 1 and nothing after, a
  // SANDBOX_ERROR aside). They count as failures at every turn from t on.
  std::vector<int> stopped_before_turn;
  int64_t turn_samples = 0, completion_tokens = 0;
};

// Counts the records of each task in `tasks` (records of other tasks are ignored). A record
// with a sample or turn out of the spec's range is a programming error (LEAP_CHECK).
std::vector<TaskTally> tally_tasks(const std::vector<int>& tasks,
                                   const std::vector<EvalRecord>& records, const EvalSpec& spec);

struct EvalSummary {
  int tasks = 0;
  int64_t samples = 0;                         // tasks x n
  std::vector<std::vector<double>> pass_at_k;  // [k][t-1]
  std::vector<double> acc;                     // [t-1]: Acc@t
  std::vector<std::vector<double>> fast_p;     // [p][t-1]; empty unless spec.timed
  std::vector<VerdictCounts> verdicts;         // [t-1]
  std::vector<int64_t> stopped;                // [t-1]: TaskTally::stopped_before_turn, summed
  int64_t turn_samples = 0;
  double mean_completion_tokens = 0;  // per generated turn-sample
};

// Means over the given tasks (none: all zeros).
EvalSummary summarize(const std::vector<const TaskTally*>& tasks, const EvalSpec& spec);

}  // namespace leap::rl
