// Builders of trajectories for the rl tests: one line per sample in a hand-worked group.
#pragma once

#include <optional>

#include "rl/trajectory.h"

namespace leap::rl::testing {

using sandbox::Verdict;

// A sample whose first success is at `turn`, after turn - 1 wrong answers; each turn costs
// `tokens_per_turn` tokens.
inline Trajectory success_at(int turn, int64_t tokens_per_turn = 100,
                             std::optional<double> speedup = std::nullopt) {
  Trajectory t;
  for (int i = 1; i < turn; ++i)
    t.turns.push_back({Verdict::kWrongAnswer, std::nullopt, tokens_per_turn});
  t.turns.push_back({Verdict::kOk, speedup, tokens_per_turn});
  return t;
}

// A sample that failed every one of its `turns` turns, the last with `last`.
inline Trajectory failure(int turns = 1, Verdict last = Verdict::kWrongAnswer,
                          int64_t tokens_per_turn = 100) {
  Trajectory t;
  for (int i = 1; i < turns; ++i)
    t.turns.push_back({Verdict::kCompileError, std::nullopt, tokens_per_turn});
  t.turns.push_back({last, std::nullopt, tokens_per_turn});
  return t;
}

// A sample the sandbox could not judge even after retries.
inline Trajectory void_sample() {
  Trajectory t;
  t.turns.push_back({Verdict::kSandboxError, std::nullopt, 100});
  return t;
}

}  // namespace leap::rl::testing
