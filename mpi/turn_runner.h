// The turns of a StepState across the ranks: per turn, the active samples' prompts are generated
// on the policy ranks (a kRollout phase, balanced by tokens) and their candidates verified by the
// sandbox ranks or in-process (a kSandbox phase); then the turn is closed. Shared by the RL
// coordinator (DCP decides after turn 1) and the evaluator (DCP off: every failed sample gets
// the next turn with its real feedback), so both drive the same protocol and the other ranks
// serve either with serve_policy() / serve_sandbox().
#pragma once

#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "mpi/engines.h"
#include "mpi/job_dispatch.h"
#include "mpi/step_state.h"
#include "mpi/topology.h"
#include "rl/dcp.h"
#include "rl/prompt_builder.h"
#include "tasks/suite.h"

namespace leap::mpi {

// Where the turns' time went, summed over the rounds of a step (both pipelines fill it alike).
struct TurnTimes {
  // Rank 0's wall-clock seconds while generation / verification ran. They add up to the turns'
  // time in the synchronous pipeline and overlap in the streaming one.
  double gen_s = 0, sandbox_s = 0;
  // Wall from the end of the turns' last generation to the end of the phase: their last verdict
  // (in the streaming pipeline, or the end of training hand-outs still running then).
  double drain_s = 0;
  // Summed over the policy ranks: seconds spent generating, and seconds idle with no work that
  // could come from anywhere but the sandbox's outstanding verdicts (the drain included).
  double policy_gen_s = 0, policy_wait_s = 0;
  double sandbox_busy_s = 0;  // summed over the jobs: seconds each held a sandbox slot
  int reference_runs = 0;     // jobs whose task's reference ran first (outputs not cached)
  int sandbox_slots = 0;      // slots of every sandbox rank (or of the in-process verifier)
  // Sandbox jobs sent while some policy rank was generating: 0 in the synchronous pipeline, where
  // verification starts after a turn's generation; the streaming pipeline's overlap, counted.
  int jobs_during_generation = 0;
  // The streaming pipeline measures the drain's share of policy_wait_s itself (policy ranks may
  // train during the drain); the synchronous one leaves it to policy ranks x drain_s.
  bool drain_wait_measured = false;
  double policy_drain_wait_s = 0;
  // Sequences (and their tokens) handed out to train during the rollout (rl.overlap_training).
  int64_t early_sequences = 0, early_positions = 0;
  // Speculative turns (rl.speculative_turns): generated before their group's decision, of them
  // dropped because DCP did not keep them, and the tokens those dropped had generated.
  int speculative_turns = 0, speculative_dropped = 0;
  int64_t speculative_dropped_tokens = 0;
};

class TurnRunner {
 public:
  // `unit` names what StepState::step() counts in warnings: "step" (RL) or "batch" (eval).
  TurnRunner(const Topology& topo, PolicyEngine& policy, VerifyEngine* local_verifier,
             int sandbox_retries, const Logger& log, const char* unit = "step");

  // Turns 1..max_turns of `state`: after turn 1 `dcp` decides which samples continue, after
  // later turns the failed ones continue; it stops early when no sample is active. Adds the
  // time spent to *times.
  Status run_turns(StepState& state, const tasks::Suite& suite, const rl::PromptBuilder& prompts,
                   const rl::DcpController& dcp, int max_turns, TurnTimes* times);

  const std::vector<int>& policy_ranks() const { return policy_ranks_; }

 private:
  // Generates the turn's completions across the policy ranks and files them in `state`; adds
  // the ranks' generating seconds to *policy_gen_s.
  Status rollout(StepState& state, const std::vector<RolloutItem>& items, int turn, double* policy_gen_s);

  const Topology& topo_;
  PolicyEngine& policy_;
  const Logger& log_;
  const char* unit_;
  JobDispatcher dispatcher_;
  std::vector<int> policy_ranks_;
};

// Tells every rank which phase comes next (the Control broadcast every phase starts with).
void announce(Control::Kind kind, int64_t step, int turn, MPI_Comm world);

}  // namespace leap::mpi
