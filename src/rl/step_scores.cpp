// Scores a step's groups: rewards, advantages, DCP statistics, pass rates, training items.
#include "rl/step_scores.h"

namespace leap::rl {

StepScores score_step(std::span<const GroupRecord> groups, const RewardOptions& reward_opts,
                      const AdvantageOptions& adv_opts) {
  StepScores out;
  int64_t pass1 = 0, pass_any = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& rec = groups[g];
    out.dcp.add_group(rec.decision, rec.trajectories);
    out.groups.push_back(score_group(rec.trajectories, reward_opts, adv_opts));
    const auto& adv = out.groups.back();
    if (adv.skip) ++out.n_dropped_groups;
    for (size_t s = 0; s < rec.trajectories.size(); ++s) {
      const auto& t = rec.trajectories[s];
      // A sample with no turn (its prompt did not fit the context) counts neither way, as in DCP:
      // it has no /samples row, so `leap analyze` could not count it either.
      if (t.num_turns() == 0 || t.is_void()) continue;
      ++out.n_samples;
      out.n_turn_samples += t.num_turns();
      pass1 += t.success_turn() == 1 ? 1 : 0;
      pass_any += t.succeeded() ? 1 : 0;
      if (adv.skip) continue;
      for (int turn = 1; turn <= t.num_turns(); ++turn)
        out.train_items.push_back(
            {.group = static_cast<int32_t>(g),
             .sample = static_cast<int32_t>(s),
             .turn = turn,
             .advantage = adv.turn_advantage[s][static_cast<size_t>(turn - 1)]});
    }
  }
  if (out.n_samples > 0) {
    out.pass_turn1 = static_cast<double>(pass1) / static_cast<double>(out.n_samples);
    out.pass_final = static_cast<double>(pass_any) / static_cast<double>(out.n_samples);
  }
  return out;
}

}  // namespace leap::rl
