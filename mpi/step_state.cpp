// Bookkeeping of one RL step on the coordinator.
#include "mpi/step_state.h"

#include <cmath>

#include "common/check.h"
#include "common/rng.h"
#include "mpi/outcome.h"

namespace leap::mpi {

rl::Trajectory SampleState::trajectory() const {
  rl::Trajectory t;
  for (const auto& r : turns) {
    if (!r.verified) break;
    rl::TurnOutcome o;
    o.verdict = static_cast<sandbox::Verdict>(r.outcome.verdict);
    if (r.outcome.speedup >= 0) o.speedup = r.outcome.speedup;
    o.completion_tokens = static_cast<int64_t>(r.completion.completion_tokens.size());
    t.turns.push_back(o);
  }
  return t;
}

namespace {
std::vector<rl::Trajectory> trajectories_of(const GroupState& g) {
  std::vector<rl::Trajectory> out;
  for (const auto& s : g.samples) out.push_back(s.trajectory());
  return out;
}
}  // namespace

StepState::StepState(int64_t step, const std::vector<int>& tasks, const StepOptions& opts)
    : step_(step), opts_(opts) {
  add_groups(tasks);
}

void StepState::add_groups(const std::vector<int>& tasks) {
  round_first_group_ = groups_.size();
  for (int t : tasks) {
    GroupState g;
    g.task = t;
    g.samples.resize(static_cast<size_t>(opts_.group_size));
    groups_.push_back(std::move(g));
  }
}

int StepState::zero_variance_groups_of_round() const {
  int n = 0;
  for (size_t g = round_first_group_; g < groups_.size(); ++g) n += groups_[g].advantages.skip;
  return n;
}

Expected<std::vector<RolloutItem>> StepState::make_turn(int turn, const tasks::Suite& suite,
                                                        const rl::PromptBuilder& prompts,
                                                        int* n_dropped) {
  turn_ = turn;
  int dropped = 0;
  std::vector<RolloutItem> items;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t s = 0; s < groups_[g].samples.size(); ++s) {
      if (!groups_[g].samples[s].active) continue;
      LEAP_ASSIGN_OR_RETURN(auto item, make_sample_turn(static_cast<int>(g), static_cast<int>(s), turn, suite, prompts));
      if (item) items.push_back(std::move(*item));
      else ++dropped;
    }
  }
  if (n_dropped) *n_dropped = dropped;
  return items;
}

Expected<std::optional<RolloutItem>> StepState::make_sample_turn(int group, int sample_index, int turn,
                                                                 const tasks::Suite& suite,
                                                                 const rl::PromptBuilder& prompts) {
  GroupState& grp = groups_[static_cast<size_t>(group)];
  SampleState& sample = grp.samples[static_cast<size_t>(sample_index)];
  const tasks::Task& task = suite.tasks[static_cast<size_t>(grp.task)];
  std::vector<rl::PreviousTurn> history;
  for (const auto& r : sample.turns)
    history.push_back(rl::previous_turn(r.completion.text, to_verify_result(r.outcome), r.completion.completion_tokens));
  const rl::BuiltPrompt* previous = sample.turns.empty() ? nullptr : &sample.turns.back().prompt;
  LEAP_ASSIGN_OR_RETURN(rl::BuiltPrompt p, prompts.build(task, history, previous));
  if (!p.fits) {
    sample.active = false;
    return std::optional<RolloutItem>();
  }
  TurnRecord rec;
  rec.turn = turn;
  std::vector<int32_t> ids = p.ids;
  rec.prompt = std::move(p);
  int64_t uid = make_uid(group, sample_index, turn);
  rec.completion.uid = uid;
  sample.turns.push_back(std::move(rec));
  // The sampling seed depends only on (run seed, step, uid): a sample's completion does not
  // depend on which rank generates it.
  uint64_t mix = opts_.seed ^ (static_cast<uint64_t>(step_) * 0x9E3779B97F4A7C15ull);
  uint64_t x = mix ^ static_cast<uint64_t>(uid);
  return std::optional<RolloutItem>(RolloutItem{uid, grp.task, std::move(ids), Rng::splitmix64(&x)});
}

TurnRecord* StepState::find(int64_t uid) {
  size_t g = static_cast<size_t>(uid >> 24), s = static_cast<size_t>((uid >> 8) & 0xffff);
  int turn = static_cast<int>(uid & 0xff);
  if (g >= groups_.size() || s >= groups_[g].samples.size()) return nullptr;
  auto& turns = groups_[g].samples[s].turns;
  if (turn < 1 || turn > static_cast<int>(turns.size())) return nullptr;
  return &turns[static_cast<size_t>(turn - 1)];
}

Status StepState::add_completions(const std::vector<Completion>& completions, int policy_rank) {
  for (const auto& c : completions) {
    TurnRecord* r = find(c.uid);
    if (!r) return internal_error("completion for unknown sample uid " + std::to_string(c.uid));
    r->completion = c;
    r->policy_rank = policy_rank;
  }
  return Status::ok();
}

std::vector<SandboxJob> StepState::sandbox_jobs() const {
  std::vector<SandboxJob> jobs;
  for (const auto& g : groups_) {
    for (const auto& s : g.samples) {
      if (s.turns.empty()) continue;
      const TurnRecord& r = s.turns.back();
      if (r.turn == turn_ && !r.verified) jobs.push_back({r.completion.uid, g.task, r.completion.text});
    }
  }
  return jobs;
}

Status StepState::add_outcomes(const std::vector<SandboxOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    TurnRecord* r = find(o.uid);
    if (!r) return internal_error("verdict for unknown sample uid " + std::to_string(o.uid));
    r->outcome = o;
    r->verified = true;
  }
  return Status::ok();
}

void StepState::apply_dcp(const rl::DcpController& dcp) {
  for (size_t i = round_first_group_; i < groups_.size(); ++i) apply_dcp_to_group(static_cast<int>(i), dcp);
}

void StepState::apply_dcp_to_group(int group, const rl::DcpController& dcp) {
  GroupState& g = groups_[static_cast<size_t>(group)];
  auto trajs = trajectories_of(g);
  // Turn 1 alone: in the streaming pipeline a sample may be further on already (early_turn2).
  for (auto& t : trajs)
    if (t.turns.size() > 1) t.turns.resize(1);
  g.dcp = dcp.decide(trajs);
  for (size_t s = 0; s < g.samples.size(); ++s) {
    g.samples[s].active = g.samples[s].active && opts_.max_turns > 1 && dcp.continues(g.dcp, trajs[s]);
  }
}

StepState::Turn1Tally StepState::turn1_tally(int group) const {
  const GroupState& g = groups_[static_cast<size_t>(group)];
  Turn1Tally t;
  for (size_t s = 0; s < g.samples.size(); ++s) {
    const SampleState& sample = g.samples[s];
    if (sample.turns.empty()) continue;  // its prompt did not fit: counts neither way
    if (!sample.turns.front().verified) {
      ++t.pending;
      continue;
    }
    rl::Trajectory traj = sample.trajectory();
    traj.turns.resize(1);
    if (traj.is_void()) continue;
    ++t.n_valid;
    if (traj.succeeded()) continue;
    ++t.n_fail;
    if (sample.active && sample.turns.size() == 1) t.failed.push_back(static_cast<int>(s));
  }
  return t;
}

bool StepState::expansion_forced(int group, const rl::DcpController& dcp) const {
  const Turn1Tally t = turn1_tally(group);
  return opts_.max_turns >= 2 && dcp.expansion_forced(t.n_fail, t.n_valid, t.pending);
}

std::vector<int> StepState::early_turn2(int group, const rl::DcpController& dcp) const {
  if (!expansion_forced(group, dcp)) return {};
  return turn1_tally(group).failed;
}

std::vector<int> StepState::speculative_turn2(int group, const rl::DcpController& dcp) const {
  Turn1Tally t = turn1_tally(group);
  if (opts_.max_turns < 2 || t.pending == 0 || dcp.expansion_forced(t.n_fail, t.n_valid, t.pending) ||
      !dcp.expansion_possible(t.n_fail, t.n_valid, t.pending))
    return {};
  return t.failed;
}

void StepState::retract_turn(int group, int sample_index, int turn) {
  SampleState& s = groups_[static_cast<size_t>(group)].samples[static_cast<size_t>(sample_index)];
  LEAP_CHECK(turn > 1 && static_cast<int>(s.turns.size()) == turn && !s.turns.back().verified,
             "retracting turn " << turn << " of group " << group << ", sample " << sample_index
                                << ", which is not its unverified last turn");
  s.turns.pop_back();
}

bool StepState::turn1_verified(int group) const {
  for (const auto& s : groups_[static_cast<size_t>(group)].samples)
    if (!s.turns.empty() && !s.turns.front().verified) return false;
  return true;
}

void StepState::close_turn(int turn) {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t s = 0; s < groups_[g].samples.size(); ++s) close_sample_turn(static_cast<int>(g), static_cast<int>(s), turn);
}

void StepState::close_sample_turn(int group, int sample_index, int turn) {
  SampleState& s = groups_[static_cast<size_t>(group)].samples[static_cast<size_t>(sample_index)];
  if (!s.active) return;
  // A turn that still ends in SANDBOX_ERROR after the retries makes the sample void (rl/trajectory.h)
  // at whatever turn: it stops there. Going on would show the policy an infrastructure error as
  // feedback and let a later verdict turn a void trajectory into a judged one, trained at the
  // reward of turns the sandbox never judged.
  const rl::Trajectory outcome = s.trajectory();
  s.active = turn < opts_.max_turns && !outcome.succeeded() && !outcome.is_void() && !s.turns.empty() &&
             s.turns.back().turn == turn;
}

bool StepState::any_active() const {
  for (const auto& g : groups_)
    for (const auto& s : g.samples)
      if (s.active) return true;
  return false;
}

void StepState::score(const rl::RewardOptions& rewards, const rl::AdvantageOptions& advantages) {
  std::vector<rl::GroupRecord> records;
  for (const auto& g : groups_) records.push_back({trajectories_of(g), g.dcp});
  scores_ = rl::score_step(records, rewards, advantages);
  for (size_t g = 0; g < groups_.size(); ++g) set_advantages(static_cast<int>(g), scores_.groups[g]);
}

void StepState::set_advantages(int group, const rl::GroupAdvantages& adv) {
  GroupState& grp = groups_[static_cast<size_t>(group)];
  grp.advantages = adv;
  for (size_t s = 0; s < grp.samples.size(); ++s) {
    auto& turns = grp.samples[s].turns;
    const auto& a = adv.turn_advantage[s];
    for (size_t t = 0; t < turns.size(); ++t) turns[t].advantage = t < a.size() ? a[t] : 0.0;
  }
}

bool StepState::group_final(int group) const {
  if (!turn1_verified(group)) return false;
  for (const auto& s : groups_[static_cast<size_t>(group)].samples)
    if (s.active || (!s.turns.empty() && !s.turns.back().verified)) return false;
  return true;
}

std::vector<StepState::TrainItem> StepState::score_group(int group, const rl::RewardOptions& rewards,
                                                         const rl::AdvantageOptions& advantages) {
  const GroupState& g = groups_[static_cast<size_t>(group)];
  const rl::GroupRecord record{trajectories_of(g), g.dcp};
  rl::StepScores one = rl::score_step(std::span(&record, 1), rewards, advantages);
  set_advantages(group, one.groups.front());
  for (auto& it : one.train_items) it.group = group;
  return items_of(one.train_items);
}

std::vector<StepState::TrainItem> StepState::items_of(const std::vector<rl::TrainItem>& scored) const {
  std::vector<TrainItem> items;
  for (const auto& it : scored) {
    const auto& turns = groups_[static_cast<size_t>(it.group)].samples[static_cast<size_t>(it.sample)].turns;
    const TurnRecord& r = turns[static_cast<size_t>(it.turn - 1)];
    if (r.completion.completion_tokens.empty()) continue;  // nothing was generated to train on
    if (trained_early_.count(r.completion.uid)) continue;  // in the gradient already
    items.push_back({it.group, it.sample, it.turn, &r});
  }
  return items;
}

std::vector<StepState::TrainItem> StepState::train_items() const { return items_of(scores_.train_items); }

void StepState::fill_rows(io::StepRow* step_row, std::vector<io::SampleRow>* rows,
                          std::vector<io::SampleText>* texts) const {
  const rl::DcpStepStats& stats = scores_.dcp;
  io::StepRow& st = *step_row;
  st.step = step_;
  st.n_groups = static_cast<int32_t>(stats.n_groups);
  st.n_easy = static_cast<int32_t>(stats.n_easy);
  st.n_hopeless = static_cast<int32_t>(stats.n_hopeless);
  st.n_expanded = static_cast<int32_t>(stats.n_expanded);
  st.n_sandbox_jobs = static_cast<int32_t>(stats.sandbox_jobs);
  st.n_dropped_groups = static_cast<int32_t>(scores_.n_dropped_groups);
  st.pass_turn1 = scores_.pass_turn1;
  st.pass_final = scores_.pass_final;
  int64_t tokens = 0, turn_samples = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const GroupState& grp = groups_[g];
    for (size_t s = 0; s < grp.samples.size(); ++s) {
      for (const auto& r : grp.samples[s].turns) {
        io::SampleRow row;
        row.step = step_;
        row.task = grp.task;
        row.group = static_cast<int32_t>(g);
        row.sample = static_cast<int32_t>(s);
        row.turn = r.turn;
        row.verdict = static_cast<int8_t>(r.verified ? r.outcome.verdict : static_cast<int>(sandbox::Verdict::kSandboxError));
        row.dcp = static_cast<io::DcpClass>(static_cast<int8_t>(grp.dcp.label));
        row.reward = s < grp.advantages.rewards.size() ? static_cast<float>(grp.advantages.rewards[s]) : 0.f;
        row.advantage = static_cast<float>(r.advantage);
        row.prompt_tokens = static_cast<int32_t>(r.completion.prompt_tokens.size());
        row.completion_tokens = static_cast<int32_t>(r.completion.completion_tokens.size());
        row.kv_reused_tokens = r.completion.kv_reused_tokens;
        row.speedup = r.outcome.speedup >= 0 ? static_cast<float>(r.outcome.speedup) : NAN;
        row.compile_ms = static_cast<float>(r.outcome.compile_ms);
        row.exec_ms = static_cast<float>(r.outcome.exec_ms);
        row.max_abs_err = static_cast<float>(r.outcome.max_abs_err);
        row.mpi_rank = r.policy_rank;
        rows->push_back(row);
        texts->push_back({r.prompt.text, r.completion.text, r.outcome.feedback});
        tokens += row.completion_tokens;
        st.prefill_tokens += row.prompt_tokens - row.kv_reused_tokens;
        st.kv_reused_tokens += row.kv_reused_tokens;
        ++turn_samples;
      }
    }
  }
  st.n_samples = static_cast<int32_t>(turn_samples);
  st.tokens_generated = tokens;
  st.mean_completion_tokens = turn_samples ? static_cast<double>(tokens) / static_cast<double>(turn_samples) : 0;
}

}  // namespace leap::mpi
