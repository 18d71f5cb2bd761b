// The aggregation behind `leap analyze` on hand-worked steps: pass rates by turn with void
// trajectories (last turn SANDBOX_ERROR) left out, reward mean and population std, verdict counts
// per turn, token quantiles (linear interpolation, as numpy), wall-clock running sums, and
// rl.max_turns read from the stored config.
#include <gtest/gtest.h>

#include <cmath>

#include "io/run_summary.h"

namespace leap::io {
namespace {

using sandbox::Verdict;

SampleRow row(int64_t step, int32_t group, int32_t sample, int32_t turn, Verdict v, float reward,
              int32_t completion_tokens) {
  SampleRow r;
  r.step = step;
  r.group = group;
  r.sample = sample;
  r.turn = turn;
  r.verdict = static_cast<int8_t>(v);
  r.reward = reward;
  r.prompt_tokens = 100 * turn;
  r.completion_tokens = completion_tokens;
  return r;
}

StepRow step_row(int64_t step, double time_s, int32_t n_samples) {
  StepRow s;
  s.step = step;
  s.time_s = time_s;
  s.n_samples = n_samples;
  return s;
}

TEST(RunSummary, HandWorkedStep) {
  // Step 3. Trajectories (group, sample):
  //   (0,0) OK at turn 1                          -> passes by turns 1, 2, 3
  //   (0,1) COMPILE_ERROR, then OK at turn 2      -> passes by turns 2, 3
  //   (0,2) WRONG_ANSWER, WRONG_ANSWER, OK        -> passes by turn 3
  //   (0,3) SANDBOX_ERROR at turn 1               -> void
  //   (1,0) WRONG_ANSWER, then SANDBOX_ERROR      -> void (its last turn)
  //   (1,1) FORMAT_ERROR at turn 1 only           -> fails
  // Non-void: 4, so pass by turn 1/2/3 = 1/4, 2/4, 3/4.
  // Rewards 1, 1, -1, -1, 0.5, -0.5 (one per trajectory): mean 0, population variance 4.5/6.
  std::vector<SampleRow> s = {
      row(3, 0, 0, 1, Verdict::kOk, 1, 10),
      row(3, 0, 1, 1, Verdict::kCompileError, 1, 20),
      row(3, 0, 1, 2, Verdict::kOk, 1, 30),
      row(3, 0, 2, 1, Verdict::kWrongAnswer, -1, 40),
      row(3, 0, 2, 2, Verdict::kWrongAnswer, -1, 50),
      row(3, 0, 2, 3, Verdict::kOk, -1, 60),
      row(3, 0, 3, 1, Verdict::kSandboxError, -1, 70),
      row(3, 1, 0, 1, Verdict::kWrongAnswer, 0.5, 80),
      row(3, 1, 0, 2, Verdict::kSandboxError, 0.5, 90),
      row(3, 1, 1, 1, Verdict::kFormatError, -0.5, 100),
  };
  StepRow st = step_row(3, 2.0, static_cast<int32_t>(s.size()));
  RunSummary r = summarize_run({st}, s, 10.0, 0);
  ASSERT_EQ(r.turns, 3);
  ASSERT_EQ(r.steps.size(), 1u);
  const StepSummary& x = r.steps[0];
  EXPECT_EQ(x.trajectories, 6);
  EXPECT_EQ(x.void_trajectories, 2);
  ASSERT_EQ(x.pass_by_turn.size(), 3u);
  EXPECT_DOUBLE_EQ(x.pass_by_turn[0], 0.25);
  EXPECT_DOUBLE_EQ(x.pass_by_turn[1], 0.5);
  EXPECT_DOUBLE_EQ(x.pass_by_turn[2], 0.75);
  EXPECT_NEAR(x.reward_mean, 0.0, 1e-12);
  EXPECT_NEAR(x.reward_std, std::sqrt(0.75), 1e-12);
  EXPECT_DOUBLE_EQ(x.wall_s, 12.0);
  EXPECT_DOUBLE_EQ(x.mean_completion_tokens, 55.0);         // (10 + 20 + ... + 100) / 10
  EXPECT_DOUBLE_EQ(x.mean_prompt_tokens, 100.0 * 15 / 10);  // turns 1,1,2,1,2,3,1,1,2,1 sum to 15
  EXPECT_EQ(x.verdicts[static_cast<size_t>(Verdict::kOk)], 3);
  EXPECT_EQ(x.verdicts[static_cast<size_t>(Verdict::kSandboxError)], 2);
  // Per turn: turn 1 has 6 rows (1 OK, 1 COMPILE, 2 WRONG, 1 SANDBOX, 1 FORMAT), turn 2 has 3, turn
  // 3 has 1.
  EXPECT_EQ(r.verdicts_by_turn[0][static_cast<size_t>(Verdict::kWrongAnswer)], 2);
  EXPECT_EQ(r.verdicts_by_turn[0][static_cast<size_t>(Verdict::kOk)], 1);
  EXPECT_EQ(r.verdicts_by_turn[1][static_cast<size_t>(Verdict::kOk)], 1);
  EXPECT_EQ(r.verdicts_by_turn[1][static_cast<size_t>(Verdict::kSandboxError)], 1);
  EXPECT_EQ(r.verdicts_by_turn[2][static_cast<size_t>(Verdict::kOk)], 1);
  EXPECT_EQ(r.samples, 10);
  EXPECT_EQ(r.trajectories, 6);
  // Completion tokens 10..100: p10 at h = 0.9 -> 19, p50 at h = 4.5 -> 55, p90 at h = 8.1 -> 91.
  EXPECT_EQ(r.completion_tokens.count, 10);
  EXPECT_DOUBLE_EQ(r.completion_tokens.p10, 19.0);
  EXPECT_DOUBLE_EQ(r.completion_tokens.p50, 55.0);
  EXPECT_DOUBLE_EQ(r.completion_tokens.p90, 91.0);
  EXPECT_DOUBLE_EQ(r.completion_tokens.min, 10.0);
  EXPECT_DOUBLE_EQ(r.completion_tokens.max, 100.0);
  // Turn 3 has the single row 60: every quantile is 60.
  EXPECT_EQ(r.completion_tokens_by_turn[2].count, 1);
  EXPECT_DOUBLE_EQ(r.completion_tokens_by_turn[2].p25, 60.0);
}

TEST(RunSummary, StepsFollowTheirRowsAndTimesAccumulate) {
  std::vector<SampleRow> s = {row(0, 0, 0, 1, Verdict::kWrongAnswer, 0, 5),
                              row(0, 0, 1, 1, Verdict::kOk, 0, 7),
                              row(1, 0, 0, 1, Verdict::kSandboxError, 0, 9)};
  StepRow a = step_row(0, 1.5, 2), b = step_row(1, 2.5, 1);
  a.n_sandbox_jobs = 2;
  b.n_sandbox_jobs = 1;
  RunSummary r = summarize_run({a, b}, s, 0.0, 2);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.turns, 2);  // the configured max_turns, though no row reached turn 2
  EXPECT_DOUBLE_EQ(r.steps[0].pass_by_turn[0], 0.5);
  EXPECT_DOUBLE_EQ(r.steps[0].pass_by_turn[1], 0.5);
  EXPECT_TRUE(std::isnan(r.steps[1].pass_by_turn[0]));  // only a void trajectory
  EXPECT_DOUBLE_EQ(r.steps[0].wall_s, 1.5);
  EXPECT_DOUBLE_EQ(r.steps[1].wall_s, 4.0);
  EXPECT_DOUBLE_EQ(r.time_s, 4.0);
  EXPECT_EQ(r.sandbox_jobs, 3);
  EXPECT_EQ(r.completion_tokens_by_turn[1].count, 0);
  EXPECT_TRUE(std::isnan(r.completion_tokens_by_turn[1].mean));
}

TEST(RunSummary, EmptyRun) {
  RunSummary r = summarize_run({}, {}, 0.0, 3);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_EQ(r.turns, 3);
  EXPECT_EQ(r.completion_tokens.count, 0);
  EXPECT_TRUE(std::isnan(r.completion_tokens.p50));
}

TEST(RunSummary, QuantilesInterpolateLikeNumpy) {
  // numpy.quantile([1, 2, 3, 4], q): 0.1 -> 1.3, 0.5 -> 2.5, 0.9 -> 3.7, 0 -> 1, 1 -> 4.
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_NEAR(quantile_sorted(v, 0.1), 1.3, 1e-12);
  EXPECT_NEAR(quantile_sorted(v, 0.5), 2.5, 1e-12);
  EXPECT_NEAR(quantile_sorted(v, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 4.0);
  EXPECT_TRUE(std::isnan(quantile_sorted({}, 0.5)));
}

TEST(RunSummary, MaxTurnsFromTheStoredConfig) {
  EXPECT_EQ(configured_max_turns("[train]\nsteps = 2\n\n[rl]\ngroup_size = 4\nmax_turns = 3\n"), 3);
  EXPECT_EQ(configured_max_turns("[sampler]\nmax_turns = 9\n[rl]\ngroup_size = 4\n"), 0);
  EXPECT_EQ(configured_max_turns("[rl]\nmax_turns = many\n"), 0);
  EXPECT_EQ(configured_max_turns(""), 0);
}

}  // namespace
}  // namespace leap::io
