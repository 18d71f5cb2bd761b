// Rewards: hand-worked rank tournaments for G = 2, 3, 8 (all-pass, all-fail, severity, void
// samples), the binary/score baselines, and properties of rank rewards over random groups:
// bounds, zero sum, invariance to reordering and to scaling times and tokens, monotonicity.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "common/rng.h"
#include "rl/rewards.h"
#include "rl_test_util.h"

namespace leap::rl {
namespace {

using namespace leap::rl::testing;

std::vector<double> rank(const std::vector<Trajectory>& g, bool severity = false) {
  return compute_rewards(
      g, {.mode = RewardMode::kRank, .noise_band = 0.05, .failure_severity = severity});
}

void expect_rewards(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "sample " << i;
}

TEST(RankReward, G2SuccessBeatsFailure) {
  expect_rewards(rank({success_at(1), failure(1)}), {1, -1});
  expect_rewards(rank({failure(3), success_at(3)}), {-1, 1});
}

TEST(RankReward, G3EarlierSuccessBeatsLater) {
  // turn-1 success beats both; turn-2 success beats the failure only.
  expect_rewards(rank({success_at(2), failure(2), success_at(1)}), {0, -1, 1});
}

TEST(RankReward, G8HandWorked) {
  std::vector<Trajectory> g = {
      success_at(1, 300, 1.52),  // s0: loses to s1 on tokens (speedups within 5%), to s2 on speed
      success_at(1, 200, 1.50),  // s1: loses to s2 only
      success_at(1, 500, 2.00),  // s2: fastest turn-1 success: beats everyone
      success_at(2, 100, 3.00),  // s3: later turn loses to turn-1 successes despite its speed
      success_at(3, 100),        // s4
      failure(3, Verdict::kWrongAnswer),
      failure(3, Verdict::kCompileError),
      failure(3, Verdict::kFormatError),
  };
  // wins - losses over 7 opponents, worked by hand.
  expect_rewards(rank(g), {3 / 7.0, 5 / 7.0, 1.0, 1 / 7.0, -1 / 7.0, -5 / 7.0, -5 / 7.0, -5 / 7.0});
  // With severity, the failures are ordered: wrong answer > compile error > format error.
  expect_rewards(rank(g, true),
                 {3 / 7.0, 5 / 7.0, 1.0, 1 / 7.0, -1 / 7.0, -3 / 7.0, -5 / 7.0, -1.0});
}

TEST(RankReward, AllPassOnlyTokensDecide) {
  expect_rewards(
      rank({success_at(1, 100), success_at(1, 200), success_at(1, 200), success_at(1, 400)}),
      {1, 0, 0, -1});
  // Timed but within the noise band: still the tokens decide.
  expect_rewards(rank({success_at(1, 300, 1.04), success_at(1, 100, 1.00)}), {-1, 1});
  // Beyond the band the faster one wins, whatever its length.
  expect_rewards(rank({success_at(1, 300, 1.06), success_at(1, 100, 1.00)}), {1, -1});
  // Only one of the two timed: speed cannot be compared, tokens decide.
  expect_rewards(rank({success_at(1, 300, 9.0), success_at(1, 100)}), {-1, 1});
}

TEST(RankReward, WithoutTokenTiebreakUnseparatedSuccessesDraw) {
  const RewardOptions opts{.mode = RewardMode::kRank, .noise_band = 0.05, .token_tiebreak = false};
  // Untimed: every success draws, whatever its length.
  expect_rewards(compute_rewards(std::vector<Trajectory>{success_at(1, 100), success_at(1, 200),
                                                         success_at(1, 400)},
                                 opts),
                 {0, 0, 0});
  // Speed still decides beyond the band, and within it the match is a draw.
  expect_rewards(
      compute_rewards(std::vector<Trajectory>{success_at(1, 300, 1.06), success_at(1, 100, 1.00)},
                      opts),
      {1, -1});
  expect_rewards(
      compute_rewards(std::vector<Trajectory>{success_at(1, 300, 1.04), success_at(1, 100, 1.00)},
                      opts),
      {0, 0});
  // Correctness and turns are unchanged: (wins - losses) / 3, worked by hand.
  expect_rewards(compute_rewards(std::vector<Trajectory>{success_at(1, 900), success_at(1, 100),
                                                         success_at(2, 50), failure(3)},
                                 opts),
                 {2 / 3.0, 2 / 3.0, -1 / 3.0, -1.0});
}

TEST(RankReward, AllFailAllDrawsAllZero) {
  std::vector<Trajectory> g = {failure(1, Verdict::kWrongAnswer, 10),
                               failure(1, Verdict::kFormatError, 900),
                               failure(1, Verdict::kTimeout, 50)};
  expect_rewards(rank(g), {0, 0, 0});
  std::vector<Trajectory> g8(8, failure(3));
  expect_rewards(rank(g8), std::vector<double>(8, 0.0));
}

TEST(RankReward, VoidSamplesPlayNoMatches) {
  // The divisor is the number of valid opponents: the success still earns 1.
  expect_rewards(rank({success_at(1), void_sample(), failure(1)}), {1, 0, -1});
  expect_rewards(rank({success_at(1), void_sample()}), {0, 0});
  // A sample with no turn (its prompt did not fit) has no outcome either: it counts neither way,
  // as in DCP and the pass rates (it used to play as a failure).
  expect_rewards(rank({success_at(1), Trajectory{}, failure(1)}), {1, 0, -1});
  expect_rewards(rank({success_at(1), Trajectory{}}), {0, 0});
}

TEST(BaselineRewards, BinaryAndScore) {
  std::vector<Trajectory> g = {success_at(1), success_at(2, 100, 2.0), failure(2), void_sample()};
  expect_rewards(compute_rewards(g, {.mode = RewardMode::kBinary}), {1, 1, 0, 0});
  // speedup 1 where untimed: 0.3 + 1; timed 2x: 0.3 + 2.
  expect_rewards(compute_rewards(g, {.mode = RewardMode::kScore}), {1.3, 2.3, 0, 0});
}

// ---- properties over random groups ---------------------------------------------------------

Trajectory random_trajectory(Rng& rng) {
  const int turns = 1 + static_cast<int>(rng.below(3));
  const int64_t tokens = 1 + static_cast<int64_t>(rng.below(50));  // few values: ties happen
  if (rng.uniform() < 0.4) {
    static constexpr Verdict kFails[] = {Verdict::kWrongAnswer, Verdict::kCompileError,
                                         Verdict::kFormatError, Verdict::kRuntimeError};
    return failure(turns, kFails[rng.below(4)], tokens);
  }
  std::optional<double> speedup;
  if (rng.uniform() < 0.6) speedup = rng.uniform(0.2, 4.0);
  return success_at(turns, tokens, speedup);
}

std::vector<Trajectory> random_group(Rng& rng) {
  std::vector<Trajectory> g(2 + rng.below(15));
  for (auto& t : g) t = random_trajectory(rng);
  return g;
}

TEST(RankRewardProperty, BoundedAndSumToZero) {
  Rng rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    auto g = random_group(rng);
    for (bool severity : {false, true}) {
      auto r = rank(g, severity);
      for (double x : r) {
        EXPECT_GE(x, -1.0);
        EXPECT_LE(x, 1.0);
      }
      EXPECT_NEAR(std::accumulate(r.begin(), r.end(), 0.0), 0.0, 1e-12);
    }
  }
}

TEST(RankRewardProperty, InvariantToReordering) {
  Rng rng(8);
  for (int trial = 0; trial < 300; ++trial) {
    auto g = random_group(rng);
    auto r = rank(g);
    std::vector<size_t> perm(g.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    std::vector<Trajectory> shuffled;
    for (size_t p : perm) shuffled.push_back(g[p]);
    auto rs = rank(shuffled);
    for (size_t i = 0; i < perm.size(); ++i) EXPECT_EQ(rs[i], r[perm[i]]);
  }
}

TEST(RankRewardProperty, InvariantToScalingTimesAndTokens) {
  Rng rng(9);
  for (int trial = 0; trial < 300; ++trial) {
    auto g = random_group(rng);
    auto r = rank(g);
    for (double time_scale : {0.5, 4.0}) {  // powers of two scale speedups exactly
      auto scaled = g;
      for (auto& t : scaled)
        for (auto& turn : t.turns) {
          turn.completion_tokens *= 3;
          if (turn.speedup) *turn.speedup *= time_scale;
        }
      EXPECT_EQ(rank(scaled), r);
    }
  }
}

TEST(RankRewardProperty, MonotoneInOutcome) {
  Rng rng(10);
  for (int trial = 0; trial < 300; ++trial) {
    auto g = random_group(rng);
    auto r = rank(g);
    const size_t i = rng.below(g.size());
    // Improve sample i: a failure becomes a turn-3 success, a success moves one turn earlier
    // (or, at turn 1, gets cheaper and faster). Its reward cannot fall, no other can rise.
    auto better = g;
    Trajectory& t = better[i];
    if (!t.succeeded()) {
      t = success_at(3, t.turns.back().completion_tokens);
    } else if (t.num_turns() > 1) {
      t.turns.erase(t.turns.begin());
    } else {
      t.turns[0].completion_tokens = std::max<int64_t>(0, t.turns[0].completion_tokens - 10);
      if (t.turns[0].speedup) *t.turns[0].speedup *= 1.5;
    }
    auto rb = rank(better);
    EXPECT_GE(rb[i], r[i]);
    for (size_t j = 0; j < g.size(); ++j)
      if (j != i) {
        EXPECT_LE(rb[j], r[j]);
      }
  }
}

TEST(RankRewardProperty, StrictlyBetterOutcomeClassEarnsMore) {
  // A success beats every failure and an earlier success every later one, whatever the tokens.
  Rng rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    auto g = random_group(rng);
    auto r = rank(g);
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = 0; j < g.size(); ++j) {
        auto ti = g[i].success_turn(), tj = g[j].success_turn();
        if (ti && (!tj || *ti < *tj)) {
          EXPECT_GT(r[i], r[j]) << "samples " << i << " and " << j;
        }
      }
  }
}

TEST(RankReward, MatchIsAntisymmetric) {
  Rng rng(12);
  RewardOptions opts;
  for (int trial = 0; trial < 1000; ++trial) {
    auto a = random_trajectory(rng), b = random_trajectory(rng);
    EXPECT_EQ(compare_trajectories(a, b, opts), -compare_trajectories(b, a, opts));
  }
}

}  // namespace
}  // namespace leap::rl
