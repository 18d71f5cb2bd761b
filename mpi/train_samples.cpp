// See train_samples.h.
#include "mpi/train_samples.h"

#include <algorithm>

#include "mpi/work_balance.h"

namespace leap::mpi {

namespace {

std::vector<int32_t> sequence_of(const TurnRecord& r) {
  std::vector<int32_t> s = r.completion.prompt_tokens;
  s.insert(s.end(), r.completion.completion_tokens.begin(), r.completion.completion_tokens.end());
  return s;
}

// Whether `later`'s prompt starts with the whole of `earlier` (its prompt and answer).
bool extends(const TurnRecord& later, const TurnRecord& earlier) {
  const auto& p = later.completion.prompt_tokens;
  const auto& a = earlier.completion.prompt_tokens;
  const auto& c = earlier.completion.completion_tokens;
  return p.size() >= a.size() + c.size() && std::equal(a.begin(), a.end(), p.begin()) &&
         std::equal(c.begin(), c.end(), p.begin() + static_cast<long>(a.size()));
}

TrainSample one_turn(const TurnRecord& r) {
  TrainSample s;
  s.tokens = sequence_of(r);
  s.prompt_len = static_cast<int32_t>(r.completion.prompt_tokens.size());
  s.old_logprobs = r.completion.logprobs;
  s.advantage = static_cast<float>(r.advantage);
  return s;
}

TrainSample whole_trajectory(const std::vector<const StepState::TrainItem*>& turns) {
  TrainSample s;
  s.tokens = sequence_of(*turns.back()->record);
  for (const auto* t : turns) {
    const auto& c = t->record->completion;
    s.span_start.push_back(static_cast<int32_t>(c.prompt_tokens.size()));
    s.span_len.push_back(static_cast<int32_t>(c.completion_tokens.size()));
    s.span_advantage.push_back(static_cast<float>(t->record->advantage));
    s.old_logprobs.insert(s.old_logprobs.end(), c.logprobs.begin(), c.logprobs.end());
  }
  return s;
}

}  // namespace

std::vector<TrainUnit> train_units(const std::vector<StepState::TrainItem>& items, bool trajectory_once,
                                   int64_t* merged) {
  std::vector<TrainUnit> units;
  for (size_t i = 0; i < items.size();) {
    size_t j = i + 1;
    while (j < items.size() && items[j].group == items[i].group && items[j].sample == items[i].sample) ++j;
    bool merge = trajectory_once && j - i > 1;
    for (size_t k = i + 1; merge && k < j; ++k) merge = extends(*items[k].record, *items[k - 1].record);
    if (merge) {
      std::vector<const StepState::TrainItem*> turns;
      for (size_t k = i; k < j; ++k) turns.push_back(&items[k]);
      TrainUnit u{whole_trajectory(turns), {}};
      for (const auto* t : turns) u.uids.push_back(t->record->completion.uid);
      units.push_back(std::move(u));
      if (merged) ++*merged;
    } else {
      for (size_t k = i; k < j; ++k) units.push_back({one_turn(*items[k].record), {items[k].record->completion.uid}});
    }
    i = j;
  }
  return units;
}

TrainPlan plan_training(const std::vector<StepState::TrainItem>& items, int policy_ranks,
                        const TrainSampleOptions& opts) {
  TrainPlan plan;
  std::vector<TrainUnit> units = train_units(items, opts.trajectory_once, &plan.merged);
  plan.work.resize(static_cast<size_t>(policy_ranks));
  const int mb = std::max(1, opts.mini_batches);
  for (auto& w : plan.work) {
    w.mini_batches = mb;
    w.ppo_epochs = opts.ppo_epochs;
  }
  for (int m = 0; m < mb; ++m) {
    std::vector<size_t> part;
    std::vector<int64_t> weights;
    for (size_t u = static_cast<size_t>(m); u < units.size(); u += static_cast<size_t>(mb)) {
      part.push_back(u);
      weights.push_back(static_cast<int64_t>(units[u].sample.tokens.size()));
    }
    auto owner = balance_by_weight(weights, policy_ranks);
    for (size_t i = 0; i < part.size(); ++i) {
      TrainSample& s = units[part[i]].sample;
      s.mini_batch = m;
      ++plan.sequences;
      plan.positions += static_cast<int64_t>(s.tokens.size());
      plan.work[static_cast<size_t>(owner[i])].samples.push_back(std::move(s));
    }
  }
  return plan;
}

}  // namespace leap::mpi
