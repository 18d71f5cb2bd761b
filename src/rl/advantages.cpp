// Group normalisation, turn-level leave-one-out baselines and discounted credit.
#include "rl/advantages.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace leap::rl {

namespace {

constexpr double kZero = 1e-12;  // below this an advantage carries no gradient worth a pass

struct Moments {
  double mean = 0, std = 0;
  size_t n = 0;
};

Moments valid_moments(std::span<const Trajectory> group, std::span<const double> rewards) {
  Moments m;
  double sum = 0;
  for (size_t i = 0; i < group.size(); ++i)
    if (!group[i].is_void()) {
      sum += rewards[i];
      ++m.n;
    }
  if (m.n == 0) return m;
  m.mean = sum / static_cast<double>(m.n);
  if (m.n < 2) return m;
  double ss = 0;
  for (size_t i = 0; i < group.size(); ++i)
    if (!group[i].is_void()) ss += (rewards[i] - m.mean) * (rewards[i] - m.mean);
  m.std = std::sqrt(ss / static_cast<double>(m.n - 1));
  return m;
}

// Baseline of sample i at turn t: the mean reward of the other valid samples that reached turn t.
// nullopt when i is alone there.
std::optional<double> loo_baseline(std::span<const Trajectory> group,
                                   std::span<const double> rewards, size_t i, int turn) {
  double sum = 0;
  size_t n = 0;
  for (size_t j = 0; j < group.size(); ++j) {
    if (j == i || group[j].is_void() || group[j].num_turns() < turn) continue;
    sum += rewards[j];
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

}  // namespace

GroupAdvantages compute_advantages(std::span<const Trajectory> group,
                                   std::span<const double> rewards, const AdvantageOptions& opts) {
  LEAP_CHECK(rewards.size() == group.size(), rewards.size() << " rewards for " << group.size());
  LEAP_CHECK(opts.gamma >= 0 && opts.gamma <= 1, "gamma " << opts.gamma);
  GroupAdvantages out;
  out.rewards.assign(rewards.begin(), rewards.end());
  out.turn_advantage.resize(group.size());

  const Moments m = valid_moments(group, rewards);
  const bool is_rank = opts.mode == RewardMode::kRank;
  const double scale =
      (!is_rank && opts.std_normalize) ? 1.0 / std::max(m.std, opts.std_floor) : 1.0;
  const double group_baseline = is_rank ? 0.0 : m.mean;

  bool any_nonzero = false;
  for (size_t i = 0; i < group.size(); ++i) {
    const int last = group[i].num_turns();
    auto& adv = out.turn_advantage[i];
    adv.assign(static_cast<size_t>(last), 0.0);
    if (group[i].is_void()) continue;
    for (int t = 1; t <= last; ++t) {
      double a = 0;
      if (opts.loo) {
        auto b = loo_baseline(group, rewards, i, t);
        a = b ? (rewards[i] - *b) * scale : 0.0;
      } else {
        a = (rewards[i] - group_baseline) * scale;
      }
      if (opts.credit == Credit::kDiscounted) a *= std::pow(opts.gamma, last - t);
      adv[static_cast<size_t>(t - 1)] = a;
      any_nonzero = any_nonzero || std::abs(a) > kZero;
    }
  }
  out.skip = !any_nonzero;
  return out;
}

GroupAdvantages score_group(std::span<const Trajectory> group, const RewardOptions& reward_opts,
                            const AdvantageOptions& adv_opts) {
  LEAP_CHECK(reward_opts.mode == adv_opts.mode,
             "reward and advantage options disagree on the mode");
  auto rewards = compute_rewards(group, reward_opts);
  return compute_advantages(group, rewards, adv_opts);
}

}  // namespace leap::rl
