// The coordinator's record of one RL step: groups of samples, their turns, the DCP decision of
// each group, and the rewards and advantages after the last turn. Pure bookkeeping with no MPI,
// so the rules of a step (who gets another turn, what is trained on, what goes to HDF5) are
// tested without starting ranks. The coordinator (coordinator.cpp) moves the data.
//
// Invariants: a sample has turns 1..k with no gaps; it stops at its first OK; only samples of
// expanded groups get turns after 1; uids are unique within the step and name (group, sample,
// turn), so results coming back in any order land in the right place.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/trajectory_rows.h"
#include "mpi/messages.h"
#include "rl/advantages.h"
#include "rl/dcp.h"
#include "rl/prompt_builder.h"
#include "rl/rewards.h"
#include "rl/step_scores.h"
#include "tasks/suite.h"

namespace leap::mpi {

struct TurnRecord {
  int turn = 1;
  rl::BuiltPrompt prompt;  // ids, their text and the messages they encode
  Completion completion;  // text, tokens and behaviour log-probabilities
  SandboxOutcome outcome;
  bool verified = false;
  int policy_rank = 0;  // which rollout rank generated it
  double advantage = 0;
};

struct SampleState {
  std::vector<TurnRecord> turns;
  bool active = true;  // will get another turn if its group continues
  rl::Trajectory trajectory() const;
};

struct GroupState {
  int task = 0;  // index into the suite
  std::vector<SampleState> samples;
  rl::DcpDecision dcp;
  rl::GroupAdvantages advantages;
};

struct StepOptions {
  int group_size = 8;
  int max_turns = 3;
  uint64_t seed = 0;
};

class StepState {
 public:
  StepState(int64_t step, const std::vector<int>& tasks, const StepOptions& opts);

  // Dynamic sampling (rl.resample_zero_variance): more groups for the same step, a new round.
  // Their samples start at turn 1; DCP decides only the round's groups; score() then covers all.
  void add_groups(const std::vector<int>& tasks);
  // Groups of the latest round whose advantages are all zero (after score()).
  int zero_variance_groups_of_round() const;

  // The work items of turn `turn`: one per active sample, with its prompt built from the
  // conversation so far (appended to the sample's previous prompt, prompt_format.h). A sample
  // whose prompt cannot fit the context stops where it is (its earlier turns still count);
  // *n_dropped says how many did. A template that cannot render is an error.
  Expected<std::vector<RolloutItem>> make_turn(int turn, const tasks::Suite& suite,
                                               const rl::PromptBuilder& prompts,
                                               int* n_dropped = nullptr);
  // The same for one sample (the streaming pipeline builds each sample's next turn as soon as its
  // verdict is in): nothing when its prompt cannot fit, and then the sample stops.
  Expected<std::optional<RolloutItem>> make_sample_turn(int group, int sample, int turn, const tasks::Suite& suite,
                                                        const rl::PromptBuilder& prompts);
  // Stores generated completions (matching uids of the current turn).
  Status add_completions(const std::vector<Completion>& completions, int policy_rank);
  // The sandbox jobs of the current turn.
  std::vector<SandboxJob> sandbox_jobs() const;
  // Stores verdicts; a sample with OK stops.
  Status add_outcomes(const std::vector<SandboxOutcome>& outcomes);
  // After turn 1: DCP decides each group of the round; only continuing samples stay active.
  void apply_dcp(const rl::DcpController& dcp);
  // The same for one group, once its turn-1 verdicts are in (turn1_verified).
  void apply_dcp_to_group(int group, const rl::DcpController& dcp);
  bool turn1_verified(int group) const;
  // Before all of a group's turn-1 verdicts are in: when those in already force DCP to expand it
  // (DcpController::expansion_forced), its failed samples that have no turn 2 yet, which will
  // get one whatever the rest say; otherwise none. DCP still decides the group once every
  // verdict is in, on turn 1 alone, with the same result.
  std::vector<int> early_turn2(int group, const rl::DcpController& dcp) const;
  // Whether the verdicts in already force DCP to expand the group.
  bool expansion_forced(int group, const rl::DcpController& dcp) const;
  // While the verdicts in leave DCP's decision open (expansion possible, not forced): the failed
  // samples that would get a turn 2 if it expands, for the streaming pipeline to generate
  // speculatively (rl.speculative_turns); otherwise none.
  std::vector<int> speculative_turn2(int group, const rl::DcpController& dcp) const;
  // Takes back a turn made by make_sample_turn and not verified (a speculative turn 2 that DCP
  // did not keep): the sample is as it was before, and nothing of the turn reaches HDF5.
  void retract_turn(int group, int sample, int turn);
  // After turn t > 1: samples that succeeded stop; others continue until max_turns.
  void close_turn(int turn);
  void close_sample_turn(int group, int sample, int turn);
  bool any_active() const;
  // After the last turn: rewards, advantages and their credit to every turn (rl::score_step).
  void score(const rl::RewardOptions& rewards, const rl::AdvantageOptions& advantages);
  const rl::StepScores& scores() const { return scores_; }

  // Training samples: every generated turn of every non-void sample of a group not skipped,
  // less those trained during the rollout (mark_trained_early).
  struct TrainItem {
    int group = 0, sample = 0, turn = 0;
    const TurnRecord* record = nullptr;
  };
  std::vector<TrainItem> train_items() const;

  // Training during the rollout (rl.overlap_training). A group is final once DCP has decided it
  // and none of its samples will get another turn or waits for a verdict: nothing about it can
  // change before the step ends, so its rewards and advantages are those score() will give.
  bool group_final(int group) const;
  // Scores a final group alone (the same functions score() applies to every group) and returns
  // its training items (none when its advantages are all zero).
  std::vector<TrainItem> score_group(int group, const rl::RewardOptions& rewards,
                                     const rl::AdvantageOptions& advantages);
  // These turns (by uid) are in the gradient already: train_items() leaves them out.
  void mark_trained_early(int64_t uid) { trained_early_.insert(uid); }

  // Rows for HDF5 and the step's counters; after score().
  void fill_rows(io::StepRow* step_row, std::vector<io::SampleRow>* rows, std::vector<io::SampleText>* texts) const;

  const std::vector<GroupState>& groups() const { return groups_; }
  int64_t step() const { return step_; }
  int current_turn() const { return turn_; }

  static int64_t make_uid(int group, int sample, int turn) { return (int64_t{group} << 24) | (int64_t{sample} << 8) | turn; }
  static int group_of(int64_t uid) { return static_cast<int>(uid >> 24); }
  static int sample_of(int64_t uid) { return static_cast<int>((uid >> 8) & 0xffff); }
  static int turn_of(int64_t uid) { return static_cast<int>(uid & 0xff); }

 private:
  TurnRecord* find(int64_t uid);
  // A group's turn-1 verdicts so far, as DCP counts them, and its failed samples without a turn 2.
  struct Turn1Tally {
    int n_fail = 0, n_valid = 0, pending = 0;
    std::vector<int> failed;
  };
  Turn1Tally turn1_tally(int group) const;
  void set_advantages(int group, const rl::GroupAdvantages& adv);
  std::vector<TrainItem> items_of(const std::vector<rl::TrainItem>& scored) const;
  int64_t step_;
  StepOptions opts_;
  size_t round_first_group_ = 0;  // the first group of the latest round
  int turn_ = 0;
  std::vector<GroupState> groups_;
  rl::StepScores scores_;
  std::set<int64_t> trained_early_;  // uids of turns trained during the rollout
};

}  // namespace leap::mpi
