// The turns of a StepState as one streaming phase (rl.pipeline = stream; design.md, The streaming
// pipeline). Where TurnRunner runs turn by turn with a barrier after each phase, here:
//  - each policy rank keeps one batch decoding for the whole phase (continuous batching across
//    hand-outs: PolicyEngine::generate_stream). It sends each completion as it finishes, asks for
//    as many items as it has free slots, and new items join the batch at its next decode step.
//    Rank 0 generates its own share on a thread (LocalGenerator), so its loop, which alone calls
//    MPI, never waits behind it;
//  - every completion becomes a sandbox job at once; sandbox ranks get jobs while they have free
//    slots (credits: a rank says how many slots it has, and each verdict frees one) and send
//    each verdict as its job ends, so one slow job never holds back its rank's other slots;
//  - a group is classified by DCP as soon as its G turn-1 verdicts are in, and its continuing
//    samples' turn 2 is queued then. Earlier still, once the verdicts in force DCP to expand the
//    group whatever the rest say (StepState::early_turn2), each failed sample's turn 2 is queued
//    as its verdict comes. A later turn is queued as soon as its sample's verdict is;
//  - while a group is undecided but may still expand, a policy worker with nothing else to do
//    generates its failed samples' turn 2 speculatively; DCP's decision keeps (and then verifies)
//    or drops each (rl.speculative_turns);
//  - queued work and sandbox jobs go out highest turn first, since later turns are the step's
//    critical path;
//  - with OverlapTraining (rl.overlap_training), a group whose last verdict is in is scored at
//    once and its sequences go, a hand-out at a time, to policy workers with nothing to generate,
//    which run their forward and backward into the gradient while the rollout goes on
//    (PolicyEngine::train_early); what is not handed out by the end trains after the phase.
//  - with rl.rollout_ahead, a policy worker with nothing of this step left to generate, train or
//    speculate on while verdicts are outstanding starts the next step's turn 1 (RolloutAhead),
//    with this step's weights: one step off the policy, which the PPO ratio's recorded old
//    log-probabilities account for. The next step's phase starts from those completions.
// DCP, the rewards and the update are the same functions of the verdicts as in the synchronous
// pipeline: StepState applies the same rules one group or one sample at a time.
#pragma once

#include <utility>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "mpi/engines.h"
#include "mpi/step_state.h"
#include "mpi/topology.h"
#include "mpi/train_samples.h"
#include "mpi/turn_runner.h"
#include "rl/advantages.h"
#include "rl/dcp.h"
#include "rl/prompt_builder.h"
#include "tasks/suite.h"

namespace leap::mpi {

// Training during the rollout: how a final group is scored and cut into sequences, and how many
// sequences one hand-out carries (a worker is busy with it and takes no generation meanwhile).
struct OverlapTraining {
  rl::RewardOptions rewards;
  rl::AdvantageOptions advantages;
  bool trajectory_once = true;
  int sequences_per_handout = 4;
};

// The next step's turn 1 as far as this step's phase got with it (rl.rollout_ahead): its items
// no worker took, and the completions generated, with the rank that generated each. The items
// come from StepState::make_turn(1) on the next step's state, which the coordinator keeps.
struct RolloutAhead {
  std::vector<RolloutItem> items;
  std::vector<std::pair<Completion, int>> done;
  int dropped = 0;  // turn-1 prompts longer than the context (make_turn's count)
};

// What a phase does beside the step's own turns.
struct StreamOptions {
  const OverlapTraining* overlap = nullptr;  // null: every sequence trains after the phase
  bool speculate = false;                    // rl.speculative_turns
  // rl.rollout_ahead: this step's turn 1 as the step before left it (its items replace
  // make_turn(1)'s), and the next step's, which idle workers generate during this phase.
  RolloutAhead* carried = nullptr;
  RolloutAhead* next = nullptr;
};

class StreamRunner {
 public:
  StreamRunner(const Topology& topo, PolicyEngine& policy, VerifyEngine* local_verifier, int sandbox_retries,
               const Logger& log);

  // The same contract as TurnRunner::run_turns: turns 1..max_turns of every active sample of
  // `state`, DCP after turn 1; adds the time spent to *times. With `overlap`, final groups are
  // trained during the phase and marked in `state` (StepState::mark_trained_early). With
  // `speculate` (rl.speculative_turns), idle policy workers generate turn 2 of failed samples
  // before their group is decided; what DCP does not keep is dropped unverified. With `carried`,
  // `state`'s turn 1 was made and partly generated during the step before; with `next`, idle
  // workers generate the next step's turn 1 once nothing of this step is left to them.
  Status run_turns(StepState& state, const tasks::Suite& suite, const rl::PromptBuilder& prompts,
                   const rl::DcpController& dcp, int max_turns, TurnTimes* times, const StreamOptions& opts = {});

 private:
  const Topology& topo_;
  PolicyEngine& policy_;
  VerifyEngine* local_;
  int sandbox_retries_;
  const Logger& log_;
  std::vector<int> policy_ranks_, sandbox_ranks_;
};

// The other ranks' side of a streaming phase (after a kStream Control); they return when the
// coordinator ends the phase.
Status serve_policy_stream(const Topology& topo, PolicyEngine& policy);
Status serve_sandbox_stream(const Topology& topo, VerifyEngine& verifier);

}  // namespace leap::mpi
