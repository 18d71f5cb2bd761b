// Advantages: rank rewards pass through; binary/score are group-normalised with a std floor;
// turn-level leave-one-out baselines; discounted credit; void samples; all-zero groups skipped.
// Every expected number is worked by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>

#include "rl/advantages.h"
#include "rl_test_util.h"

namespace leap::rl {
namespace {

using namespace leap::rl::testing;

AdvantageOptions rank_opts() {
  return {.mode = RewardMode::kRank};
}

TEST(Advantages, RankRewardIsTheAdvantageOfEveryTurn) {
  std::vector<Trajectory> g = {success_at(1), success_at(2), failure(2)};
  auto a = score_group(g, {.mode = RewardMode::kRank}, rank_opts());
  EXPECT_EQ(a.rewards, (std::vector<double>{1, 0, -1}));
  ASSERT_EQ(a.turn_advantage[1].size(), 2u);
  EXPECT_EQ(a.turn_advantage[0], (std::vector<double>{1}));
  EXPECT_EQ(a.turn_advantage[1], (std::vector<double>{0, 0}));
  EXPECT_EQ(a.turn_advantage[2], (std::vector<double>{-1, -1}));
  EXPECT_FALSE(a.skip);
}

TEST(Advantages, BinaryIsGroupNormalisedWithUnbiasedStd) {
  std::vector<Trajectory> g = {success_at(1), success_at(1), failure(1), failure(1)};
  // rewards 1 1 0 0: mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = sqrt(1/3).
  AdvantageOptions o{.mode = RewardMode::kBinary};
  auto a = score_group(g, {.mode = RewardMode::kBinary}, o);
  const double want = 0.5 / std::sqrt(1.0 / 3.0);
  EXPECT_NEAR(a.turn_advantage[0][0], want, 1e-12);
  EXPECT_NEAR(a.turn_advantage[3][0], -want, 1e-12);
  o.std_normalize = false;
  a = score_group(g, {.mode = RewardMode::kBinary}, o);
  EXPECT_NEAR(a.turn_advantage[0][0], 0.5, 1e-12);
  EXPECT_NEAR(a.turn_advantage[2][0], -0.5, 1e-12);
}

TEST(Advantages, StdFloorBoundsNearConstantGroups) {
  std::vector<Trajectory> g = {success_at(1, 100, 1.0), success_at(1, 100, 1.001)};
  // score rewards 1.3 and 1.301: std ~7e-4 < floor 0.01, so the divisor is 0.01: +-0.05.
  auto a =
      score_group(g, {.mode = RewardMode::kScore}, {.mode = RewardMode::kScore, .std_floor = 0.01});
  EXPECT_NEAR(a.turn_advantage[0][0], -0.05, 1e-9);
  EXPECT_NEAR(a.turn_advantage[1][0], 0.05, 1e-9);
}

TEST(Advantages, DiscountedCredit) {
  std::vector<Trajectory> g = {success_at(3), failure(3)};
  // rank rewards +1 / -1; gamma 0.4: turns 1..3 get 0.16, 0.4, 1 of them.
  auto a = score_group(g, {.mode = RewardMode::kRank},
                       {.mode = RewardMode::kRank, .credit = Credit::kDiscounted, .gamma = 0.4});
  ASSERT_EQ(a.turn_advantage[0].size(), 3u);
  EXPECT_NEAR(a.turn_advantage[0][0], 0.16, 1e-12);
  EXPECT_NEAR(a.turn_advantage[0][1], 0.4, 1e-12);
  EXPECT_NEAR(a.turn_advantage[0][2], 1.0, 1e-12);
  EXPECT_NEAR(a.turn_advantage[1][0], -0.16, 1e-12);
}

TEST(Advantages, TurnLevelLeaveOneOut) {
  // s0 passes turn 1; s1 passes turn 2; s2 fails both turns; s3 passes turn 1 with more tokens.
  std::vector<Trajectory> g = {success_at(1, 100), success_at(2), failure(2), success_at(1, 200)};
  // rank: s0 beats all (1); s3 beats s1, s2 (1/3); s1 beats s2 (-1/3); s2 (-1).
  auto a = score_group(g, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank, .loo = true});
  EXPECT_NEAR(a.rewards[3], 1 / 3.0, 1e-12);
  // Turn 1: baseline is the mean of the 3 others. s0: 1 - (1/3 - 1/3 - 1)/3 = 4/3.
  EXPECT_NEAR(a.turn_advantage[0][0], 4 / 3.0, 1e-12);
  // Turn 2 is reached by s1 and s2 only: each is compared with the other.
  EXPECT_NEAR(a.turn_advantage[1][1], -1 / 3.0 - (-1.0), 1e-12);
  EXPECT_NEAR(a.turn_advantage[2][1], -1.0 - (-1 / 3.0), 1e-12);
  // Turn 1 of s1: 3 others 1, -1, 1/3: baseline 1/9.
  EXPECT_NEAR(a.turn_advantage[1][0], -1 / 3.0 - 1 / 9.0, 1e-12);
}

TEST(Advantages, LeaveOneOutAloneAtATurnGetsZero) {
  std::vector<Trajectory> g = {success_at(1), success_at(1, 200), failure(3)};
  auto a = score_group(g, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank, .loo = true});
  EXPECT_NE(a.turn_advantage[2][0], 0.0);
  EXPECT_EQ(a.turn_advantage[2][1], 0.0);
  EXPECT_EQ(a.turn_advantage[2][2], 0.0);
}

TEST(Advantages, VoidSamplesGetZeroAndDoNotMoveTheMean) {
  std::vector<Trajectory> g = {success_at(1), failure(1), void_sample()};
  AdvantageOptions o{.mode = RewardMode::kBinary, .std_normalize = false};
  auto a = score_group(g, {.mode = RewardMode::kBinary}, o);
  EXPECT_NEAR(a.turn_advantage[0][0], 0.5, 1e-12);  // mean of the valid two is 0.5
  EXPECT_NEAR(a.turn_advantage[1][0], -0.5, 1e-12);
  EXPECT_EQ(a.turn_advantage[2][0], 0.0);
}

TEST(Advantages, AllZeroGroupsAreSkipped) {
  EXPECT_TRUE(
      score_group(std::vector<Trajectory>(4, failure(3)), {.mode = RewardMode::kRank}, rank_opts())
          .skip);
  EXPECT_TRUE(score_group(std::vector<Trajectory>(4, success_at(1)), {.mode = RewardMode::kRank},
                          rank_opts())
                  .skip);
  EXPECT_TRUE(score_group(std::vector<Trajectory>(4, success_at(1)), {.mode = RewardMode::kBinary},
                          {.mode = RewardMode::kBinary})
                  .skip);
  // All pass, different lengths: rank still pushes towards the shorter answers.
  EXPECT_FALSE(score_group(std::vector<Trajectory>{success_at(1, 100), success_at(1, 300)},
                           {.mode = RewardMode::kRank}, rank_opts())
                   .skip);
  // The binary baseline cannot see that difference.
  EXPECT_TRUE(score_group(std::vector<Trajectory>{success_at(1, 100), success_at(1, 300)},
                          {.mode = RewardMode::kBinary}, {.mode = RewardMode::kBinary})
                  .skip);
}

}  // namespace
}  // namespace leap::rl
