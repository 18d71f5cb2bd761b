// Trajectories: the turns of one sample of a group, as the sandbox judged them.
//
// A trajectory's outcome is the turn of its first OK verdict, or failure. Turns after the first
// OK never exist (a sample stops at its first success), and every turn's verdict is kept so that
// failures can be ordered by severity and written to HDF5. Turns are numbered from 1.
//
// SANDBOX_ERROR is the infrastructure's fault, never the policy's (docs/design.md, Verification): a
// trajectory whose last turn still carries it after the caller's retries is *void*. A void
// sample plays no matches, gets reward and advantage 0, and never counts as a failure for DCP.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sandbox/verdict.h"

namespace leap::rl {

struct TurnOutcome {
  sandbox::Verdict verdict = sandbox::Verdict::kSandboxError;
  std::optional<double> speedup;  // reference time / candidate time; only where timed on a GPU
  int64_t completion_tokens = 0;  // tokens the policy generated in this turn
};

struct Trajectory {
  std::vector<TurnOutcome> turns;  // turns[0] is turn 1

  int num_turns() const { return static_cast<int>(turns.size()); }
  // Turn (1-based) of the first OK verdict, or nullopt for a failure.
  std::optional<int> success_turn() const;
  bool succeeded() const { return success_turn().has_value(); }
  // True when the sample has no outcome the policy earned: its last turn is SANDBOX_ERROR, or it
  // has no turn (its prompt did not fit). Rewards, advantages, DCP and pass rates leave it out.
  bool is_void() const;
  // Speedup of the successful turn (nullopt when failed or untimed).
  std::optional<double> success_speedup() const;
  // Completion tokens summed over all turns: what the sample cost to generate.
  int64_t total_tokens() const;
  // Verdict of the last turn (SANDBOX_ERROR for an empty trajectory).
  sandbox::Verdict final_verdict() const;
};

// How close a failure came to working, higher is closer: wrong answer (it ran) above runtime
// errors (launch, runtime, timeout, memory) above compile errors (and unsupported constructs)
// above format errors (no answer at all). OK is highest; SANDBOX_ERROR is 0 (not a failure).
int failure_severity_rank(sandbox::Verdict v);

}  // namespace leap::rl
