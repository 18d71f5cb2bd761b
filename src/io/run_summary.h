// The numbers `leap analyze` shows, aggregated from a run's trajectory rows: per step (pass rates
// by turn, DCP classes, sandbox jobs, reward statistics, token means, time split), verdict counts
// overall and per turn, token-length quantiles, and run totals.
//
// Definitions (tests/analyze/check_analyze.py re-derives each one with pandas):
//  - a trajectory is one (step, group, sample); it is void when its last turn is SANDBOX_ERROR (no
//    outcome the policy earned) and, as in training (rl/step_scores), is left out of pass rates;
//  - pass by turn k: non-void trajectories whose first OK verdict is at a turn <= k, over all
//    non-void trajectories (NaN when there are none); the last entry is the final pass rate;
//  - reward mean and std (population, ddof 0): over trajectories, each counted once;
//  - token means and quantiles: over turn-samples (rows); quantiles interpolate linearly between
//    order statistics (numpy's and pandas' default);
//  - wall_s: the running sum of the steps' time_s, i.e. training time up to the end of the step
//    (a restart's downtime is not in it).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/trajectory_rows.h"
#include "sandbox/verdict.h"

namespace leap::io {

using sandbox::VerdictCounts;

struct StepSummary {
  StepRow row;  // the /steps row as written: DCP counts, sandbox jobs, times, loss, ...
  double wall_s = 0;
  int64_t trajectories = 0, void_trajectories = 0;
  std::vector<double> pass_by_turn;  // [k - 1]: pass by turn k, k = 1..RunSummary::turns
  double reward_mean = 0, reward_std = 0;
  double mean_prompt_tokens = 0, mean_completion_tokens = 0;
  VerdictCounts verdicts{};  // over the step's turn-samples
};

struct LengthStats {
  int64_t count = 0;
  double mean = 0, min = 0, p10 = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0,
         max = 0;  // NaN when count == 0
};

struct RunSummary {
  int turns = 1;  // pass-by-turn columns: the configured rl.max_turns, or the deepest turn seen
  std::vector<StepSummary> steps;
  VerdictCounts verdicts{};
  std::vector<VerdictCounts> verdicts_by_turn;  // [turn - 1], turns entries
  LengthStats prompt_tokens, completion_tokens;
  std::vector<LengthStats> completion_tokens_by_turn;  // [turn - 1], turns entries
  // Sums over the steps shown.
  double time_s = 0, gen_s = 0, sandbox_s = 0, train_s = 0;
  double policy_busy_s = 0, policy_wait_s = 0, policy_drain_s = 0, policy_idle_s = 0;
  double sandbox_busy_s = 0, sandbox_idle_s = 0;
  int64_t sandbox_jobs = 0, tokens_generated = 0, samples = 0, trajectories = 0;
  int64_t prefill_tokens = 0, kv_reused_tokens = 0, jobs_overlapped = 0;
  int64_t train_sequences = 0, train_sequences_early = 0;  // of them during the rollout
  int64_t speculative = 0, speculative_dropped = 0;  // turns generated before their group's decision
  int64_t rollout_ahead = 0;  // turn-1 samples generated during the step before (rl.rollout_ahead)
  int64_t groups = 0, easy = 0, hopeless = 0, expanded = 0, dropped_groups = 0;
};

// `steps` and `samples` as the reader returns them (each step's samples follow it, in order);
// time_s_before is the time of earlier steps not shown (wall_s starts from it); configured_turns
// is rl.max_turns of the run's config, 0 when unknown.
RunSummary summarize_run(const std::vector<StepRow>& steps, const std::vector<SampleRow>& samples,
                         double time_s_before, int configured_turns);

// The value of `key` in `[section]` of the run's resolved config (INI text); "" when absent.
std::string config_value(const std::string& config_ini, const std::string& section, const std::string& key);
// rl.max_turns from the run's resolved config (INI text), 0 when absent or not a number.
int configured_max_turns(const std::string& config_ini);

// The q-quantile (0 <= q <= 1) of sorted values, interpolating linearly; NaN when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

}  // namespace leap::io
