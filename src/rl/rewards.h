// Rewards of one group of trajectories (samples of the same task).
//
// `rank` (LEAP): every pair of trajectories plays a match. A success beats a failure; an earlier
// success beats a later one; between successes of the same turn a faster kernel wins when both
// were timed (speedups within the noise band count as equal), then fewer tokens (summed over the
// trajectory's turns) win unless `token_tiebreak` is off; otherwise the match is a draw. Failures
// draw with each other unless `failure_severity` orders them (wrong answer > runtime error >
// compile error > format error).
// reward_i = (wins_i - losses_i) / (G_valid - 1), where G_valid excludes void samples, so a group's
// rewards lie in [-1, 1], sum to 0, and depend only on comparisons: scaling every time or token
// count by the same factor, or reordering the group, changes nothing.
//
// `binary` (1 for success, else 0) and `score` (0.3*correct + speedup*correct, as Kevin; speedup
// 1 where untimed) are the baselines; their advantages are group-normalised (advantages.h).
// Void samples (trajectory.h) get reward 0 in every mode.
#pragma once

#include <span>
#include <vector>

#include "rl/trajectory.h"

namespace leap::rl {

enum class RewardMode { kRank, kBinary, kScore };

struct RewardOptions {
  RewardMode mode = RewardMode::kRank;
  double noise_band = 0.05;       // speedups whose ratio is within 1 + noise_band are equal
  bool failure_severity = false;  // order failures by failure_severity_rank instead of drawing
  // Successes that speed does not separate: fewer tokens win (the paper's rule), or draw. Off,
  // an all-pass group that no timing separates has no gradient, as with binary rewards: where no
  // kernel is timed (the CPU interpreter) the tie-break is otherwise a pure length penalty.
  bool token_tiebreak = true;
};

// +1 when a beats b, -1 when b beats a, 0 for a draw: the rank tournament's match rule.
// Antisymmetric: compare(a, b) == -compare(b, a). Void trajectories draw with everything.
int compare_trajectories(const Trajectory& a, const Trajectory& b, const RewardOptions& opts);

// One reward per trajectory of the group, in the group's order.
std::vector<double> compute_rewards(std::span<const Trajectory> group, const RewardOptions& opts);

}  // namespace leap::rl
