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

// Wall-clock seconds rank 0 spent waiting on generation and on verification.
struct TurnTimes {
  double gen_s = 0, sandbox_s = 0;
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
  // Generates the turn's completions across the policy ranks and files them in `state`.
  Status rollout(StepState& state, const std::vector<RolloutItem>& items, int turn);

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
