// Advantages of one group and their credit across turns.
//
// Every turn of every trajectory is a training sample; this file gives each one its advantage.
// - rank rewards are already centred and scale-free, so the reward is the advantage;
// - binary/score rewards are group-normalised: minus the group mean, optionally divided by the
//   group's (unbiased) std with a floor, so a near-constant group does not explode;
// - optionally (`loo`, as Dr. Kernel's TRLOO) the baseline of turn t is instead the mean reward of
//   the *other* samples of the group that also reached turn t: at turn 2 those are the peers that
//   failed turn 1 too, which is the comparison that turn's choice actually faced. A sample alone
//   at its turn has no baseline and gets 0;
// - credit `trajectory` gives turn t the trajectory's advantage A; `discounted` gives
//   gamma^(T - t) * A, T being the trajectory's last turn (Kevin used gamma = 0.4).
// Void samples (trajectory.h) get 0 everywhere and are excluded from means and stds. A group
// whose advantages are all zero is marked `skip`: it carries no gradient and the trainer drops it.
#pragma once

#include <span>
#include <vector>

#include "rl/rewards.h"
#include "rl/trajectory.h"

namespace leap::rl {

enum class Credit { kTrajectory, kDiscounted };

struct AdvantageOptions {
  RewardMode mode = RewardMode::kRank;
  bool std_normalize = true;  // binary/score only; rank is never rescaled
  double std_floor = 1e-2;    // smallest divisor when dividing by the std
  bool loo = false;           // turn-level leave-one-out baseline instead of the group mean
  Credit credit = Credit::kTrajectory;
  double gamma = 1.0;  // discount per turn for Credit::kDiscounted, in [0, 1]
};

struct GroupAdvantages {
  std::vector<double> rewards;                      // one per trajectory
  std::vector<std::vector<double>> turn_advantage;  // [sample][turn - 1]
  bool skip = false;                                // all zero: nothing to learn from this group
};

// Advantages from rewards already computed by compute_rewards (one per trajectory).
GroupAdvantages compute_advantages(std::span<const Trajectory> group,
                                   std::span<const double> rewards, const AdvantageOptions& opts);

// Rewards then advantages: what the coordinator calls once per group after the last turn.
GroupAdvantages score_group(std::span<const Trajectory> group, const RewardOptions& reward_opts,
                            const AdvantageOptions& adv_opts);

}  // namespace leap::rl
