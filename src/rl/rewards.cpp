// Rank tournament and the binary/score baselines.
#include "rl/rewards.h"

#include <algorithm>

#include "common/check.h"

namespace leap::rl {

namespace {

// +1 when a spent fewer tokens than b, -1 when more, 0 when equal.
int fewer_tokens_wins(int64_t a, int64_t b) {
  return a < b ? 1 : (b < a ? -1 : 0);
}

// Ties between two successes of the same turn: speed first (where both were timed), then cost
// when the options ask for it.
int compare_successes(const Trajectory& a, const Trajectory& b, const RewardOptions& opts) {
  const double noise_band = opts.noise_band;
  auto sa = a.success_speedup(), sb = b.success_speedup();
  if (sa && sb && *sa > 0 && *sb > 0) {
    // A ratio, not a difference, so the band means the same at every scale.
    double hi = std::max(*sa, *sb), lo = std::min(*sa, *sb);
    if (hi > lo * (1.0 + noise_band)) return *sa > *sb ? 1 : -1;
  }
  return opts.token_tiebreak ? fewer_tokens_wins(a.total_tokens(), b.total_tokens()) : 0;
}

std::vector<double> rank_rewards(std::span<const Trajectory> group, const RewardOptions& opts) {
  const size_t g = group.size();
  std::vector<double> reward(g, 0.0);
  size_t valid = 0;
  for (const auto& t : group) valid += t.is_void() ? 0 : 1;
  if (valid < 2) return reward;
  std::vector<int> score(g, 0);
  for (size_t i = 0; i < g; ++i)
    for (size_t j = i + 1; j < g; ++j) {
      int r = compare_trajectories(group[i], group[j], opts);
      score[i] += r;
      score[j] -= r;
    }
  for (size_t i = 0; i < g; ++i)
    if (!group[i].is_void())
      reward[i] = static_cast<double>(score[i]) / static_cast<double>(valid - 1);
  return reward;
}

}  // namespace

int compare_trajectories(const Trajectory& a, const Trajectory& b, const RewardOptions& opts) {
  if (a.is_void() || b.is_void()) return 0;
  auto ta = a.success_turn(), tb = b.success_turn();
  if (ta && !tb) return 1;
  if (!ta && tb) return -1;
  if (!ta && !tb) {
    if (!opts.failure_severity) return 0;
    int ra = failure_severity_rank(a.final_verdict()),
        rb = failure_severity_rank(b.final_verdict());
    return ra > rb ? 1 : (ra < rb ? -1 : 0);
  }
  if (*ta != *tb) return *ta < *tb ? 1 : -1;
  return compare_successes(a, b, opts);
}

std::vector<double> compute_rewards(std::span<const Trajectory> group, const RewardOptions& opts) {
  LEAP_CHECK(opts.noise_band >= 0, "noise band " << opts.noise_band);
  if (opts.mode == RewardMode::kRank) return rank_rewards(group, opts);
  std::vector<double> reward(group.size(), 0.0);
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i].is_void() || !group[i].succeeded()) continue;
    reward[i] =
        opts.mode == RewardMode::kBinary ? 1.0 : 0.3 + group[i].success_speedup().value_or(1.0);
  }
  return reward;
}

}  // namespace leap::rl
