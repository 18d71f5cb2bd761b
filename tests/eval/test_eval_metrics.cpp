// The metrics of `leap eval`: the pass@k estimator against hand-worked values and against a
// brute-force count over every k-subset of n samples; tally and summary (pass@k by turn, Acc@t,
// fast_p, verdict counts) against a two-task case worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "rl/eval_metrics.h"

namespace leap::rl {
namespace {

using sandbox::Verdict;

TEST(PassAtK, HandWorkedCases) {
  EXPECT_DOUBLE_EQ(pass_at_k(5, 2, 1), 0.4);
  EXPECT_NEAR(pass_at_k(5, 2, 2), 1.0 - 3.0 / 10.0, 1e-15);  // 1 - C(3,2)/C(5,2)
  EXPECT_NEAR(pass_at_k(4, 1, 2), 0.5, 1e-15);               // 1 - C(3,2)/C(4,2)
  EXPECT_EQ(pass_at_k(8, 0, 1), 0.0);
  EXPECT_EQ(pass_at_k(8, 0, 8), 0.0);
  EXPECT_EQ(pass_at_k(8, 8, 1), 1.0);
  EXPECT_EQ(pass_at_k(4, 1, 4), 1.0);  // every 4-subset of 4 holds the correct one
  // Large n, where the binomials overflow: 1 - C(197,100)/C(200,100) = 1 -
  // (100*99*98)/(200*199*198).
  EXPECT_NEAR(pass_at_k(200, 3, 100), 1.0 - (100.0 * 99 * 98) / (200.0 * 199 * 198), 1e-12);
}

TEST(PassAtK, EqualsBruteForceOverSubsets) {
  for (int n = 1; n <= 10; ++n) {
    for (int c = 0; c <= n; ++c) {
      // Samples 0..c-1 are the correct ones.
      const unsigned correct = (1u << c) - 1;
      for (int k = 1; k <= n; ++k) {
        int subsets = 0, hit = 0;
        for (unsigned m = 0; m < (1u << n); ++m) {
          if (__builtin_popcount(m) != k) continue;
          ++subsets;
          hit += (m & correct) != 0;
        }
        EXPECT_NEAR(pass_at_k(n, c, k), static_cast<double>(hit) / subsets, 1e-12)
            << n << " " << c << " " << k;
      }
    }
  }
}

EvalRecord rec(int task, int sample, int turn, Verdict v,
               std::optional<double> speedup = std::nullopt) {
  EvalRecord r;
  r.task = task;
  r.sample = sample;
  r.turn = turn;
  r.verdict = v;
  r.completion_tokens = 10 * turn;
  r.speedup = speedup;
  return r;
}

// Task 7: sample 0 passes at turn 1 (1.5x), sample 1 at turn 2 (0.8x), sample 2 never, sample 3
// never got a turn (its prompt did not fit). Task 9: sample 0 passes at turn 3 (3x), the rest
// never. Task 5 is not evaluated and must be ignored.
std::vector<EvalRecord> two_tasks() {
  return {rec(7, 0, 1, Verdict::kOk, 1.5),     rec(7, 1, 1, Verdict::kWrongAnswer),
          rec(7, 1, 2, Verdict::kOk, 0.8),     rec(7, 2, 1, Verdict::kWrongAnswer),
          rec(7, 2, 2, Verdict::kWrongAnswer), rec(7, 2, 3, Verdict::kCompileError),
          rec(9, 0, 1, Verdict::kWrongAnswer), rec(9, 0, 2, Verdict::kWrongAnswer),
          rec(9, 0, 3, Verdict::kOk, 3.0),     rec(9, 1, 1, Verdict::kWrongAnswer),
          rec(9, 1, 2, Verdict::kWrongAnswer), rec(9, 1, 3, Verdict::kWrongAnswer),
          rec(9, 2, 1, Verdict::kWrongAnswer), rec(9, 2, 2, Verdict::kWrongAnswer),
          rec(9, 2, 3, Verdict::kWrongAnswer), rec(9, 3, 1, Verdict::kWrongAnswer),
          rec(9, 3, 2, Verdict::kWrongAnswer), rec(9, 3, 3, Verdict::kWrongAnswer),
          rec(5, 0, 1, Verdict::kOk, 9.0)};
}

TEST(EvalSummary, TwoTasksWorkedByHand) {
  EvalSpec spec{.samples = 4, .turns = 3, .ks = {1, 2}, .ps = {1.0}, .timed = true};
  auto tallies = tally_tasks({7, 9}, two_tasks(), spec);
  ASSERT_EQ(tallies.size(), 2u);
  EXPECT_EQ(tallies[0].correct_by_turn, (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(tallies[1].correct_by_turn, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(tallies[0].fast_by_turn[0], (std::vector<int>{1, 1, 1}));  // 0.8x is not fast
  EXPECT_EQ(tallies[1].fast_by_turn[0], (std::vector<int>{0, 0, 1}));

  EvalSummary s = summarize({&tallies[0], &tallies[1]}, spec);
  EXPECT_EQ(s.tasks, 2);
  EXPECT_EQ(s.samples, 8);
  EXPECT_EQ(s.turn_samples, 18);
  const std::vector<double> acc{0.125, 0.25, 0.375};  // (1/4 + 0)/2, (2/4 + 0)/2, (2/4 + 1/4)/2
  for (int t = 0; t < 3; ++t) {
    EXPECT_NEAR(s.acc[t], acc[t], 1e-15);
    EXPECT_NEAR(s.pass_at_k[0][t], acc[t], 1e-15);  // pass@1 by turn t is Acc@t
  }
  // pass@2: task 7 has 1, 2, 2 correct of 4 -> 1/2, 5/6, 5/6; task 9 has 0, 0, 1 -> 0, 0, 1/2.
  EXPECT_NEAR(s.pass_at_k[1][0], 0.25, 1e-15);
  EXPECT_NEAR(s.pass_at_k[1][1], 5.0 / 12.0, 1e-15);
  EXPECT_NEAR(s.pass_at_k[1][2], 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(s.fast_p[0][0], 0.125, 1e-15);
  EXPECT_NEAR(s.fast_p[0][2], 0.25, 1e-15);
  auto count = [&](int turn, Verdict v) {
    return s.verdicts[static_cast<size_t>(turn - 1)][static_cast<size_t>(v)];
  };
  EXPECT_EQ(count(1, Verdict::kOk), 1);
  EXPECT_EQ(count(1, Verdict::kWrongAnswer), 6);
  EXPECT_EQ(count(2, Verdict::kOk), 1);
  EXPECT_EQ(count(2, Verdict::kWrongAnswer), 5);
  EXPECT_EQ(count(3, Verdict::kOk), 1);
  EXPECT_EQ(count(3, Verdict::kWrongAnswer), 3);
  EXPECT_EQ(count(3, Verdict::kCompileError), 1);
  EXPECT_NEAR(s.mean_completion_tokens, (10.0 * 7 + 20 * 6 + 30 * 5) / 18, 1e-12);
  EXPECT_EQ(s.stopped, (std::vector<int64_t>{1, 0, 0}));  // task 7's sample 3 never got turn 1

  // Untimed (the CPU interpreter): no fast_p at all, the rest unchanged.
  spec.timed = false;
  EvalSummary u = summarize({&tallies[0], &tallies[1]}, spec);
  EXPECT_TRUE(u.fast_p.empty());
  EXPECT_EQ(u.acc, s.acc);
  // One task alone is that task's numbers.
  EvalSummary one = summarize({&tallies[1]}, spec);
  EXPECT_NEAR(one.acc[2], 0.25, 1e-15);
  EXPECT_NEAR(one.pass_at_k[1][2], 0.5, 1e-15);
}

// Samples stopped because the next prompt did not fit: before turn 1 (no record), after a failure
// with turns left; a pass, a failure at the last turn and a SANDBOX_ERROR are not stops.
TEST(EvalSummary, CountsSamplesStoppedBeforeATurn) {
  EvalSpec spec{.samples = 6, .turns = 3, .ks = {1}};
  const std::vector<EvalRecord> records{
      rec(4, 0, 1, Verdict::kWrongAnswer),                                          // stopped before 2
      rec(4, 1, 1, Verdict::kSandboxError),                                         // void, not a stop
      rec(4, 2, 1, Verdict::kCompileError), rec(4, 2, 2, Verdict::kWrongAnswer),    // stopped before 3
      rec(4, 3, 1, Verdict::kOk),                                                   // passed
      rec(4, 4, 1, Verdict::kWrongAnswer), rec(4, 4, 2, Verdict::kWrongAnswer),
      rec(4, 4, 3, Verdict::kWrongAnswer)};                                         // ran every turn
  auto tallies = tally_tasks({4}, records, spec);                                   // sample 5: none
  EXPECT_EQ(tallies[0].stopped_before_turn, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(summarize({&tallies[0]}, spec).stopped, (std::vector<int64_t>{1, 1, 1}));
}

// A SANDBOX_ERROR (void) sample counts as a failure in eval, in n as in c (training's pass rates
// leave it out; README.md says which is which): 2 OK and 2 void of n = 4 give Acc@1 = 0.5 and
// pass@2 = 1 - C(2,2)/C(4,2) = 5/6, and the verdict counts show the 2.
TEST(EvalSummary, SandboxErrorsCountAsFailures) {
  EvalSpec spec{.samples = 4, .turns = 1, .ks = {2}, .ps = {}, .timed = false};
  auto tallies = tally_tasks({3}, {rec(3, 0, 1, Verdict::kOk), rec(3, 1, 1, Verdict::kSandboxError),
                                   rec(3, 2, 1, Verdict::kOk), rec(3, 3, 1, Verdict::kSandboxError)},
                             spec);
  ASSERT_EQ(tallies.size(), 1u);
  EvalSummary s = summarize({&tallies[0]}, spec);
  EXPECT_DOUBLE_EQ(s.acc[0], 0.5);
  EXPECT_NEAR(s.pass_at_k[0][0], 5.0 / 6.0, 1e-15);
  EXPECT_EQ(s.verdicts[0][static_cast<size_t>(Verdict::kSandboxError)], 2);
  EXPECT_EQ(s.stopped[0], 0);
}

}  // namespace
}  // namespace leap::rl
