// Trajectory outcomes: first success, void samples, tokens, failure severity.
#include "rl/trajectory.h"

namespace leap::rl {

using sandbox::Verdict;

std::optional<int> Trajectory::success_turn() const {
  for (size_t i = 0; i < turns.size(); ++i)
    if (turns[i].verdict == Verdict::kOk) return static_cast<int>(i) + 1;
  return std::nullopt;
}

bool Trajectory::is_void() const {
  return turns.empty() || turns.back().verdict == Verdict::kSandboxError;
}

std::optional<double> Trajectory::success_speedup() const {
  auto t = success_turn();
  if (!t) return std::nullopt;
  return turns[static_cast<size_t>(*t - 1)].speedup;
}

int64_t Trajectory::total_tokens() const {
  int64_t sum = 0;
  for (const auto& t : turns) sum += t.completion_tokens;
  return sum;
}

Verdict Trajectory::final_verdict() const {
  return turns.empty() ? Verdict::kSandboxError : turns.back().verdict;
}

int failure_severity_rank(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return 5;
    case Verdict::kWrongAnswer:
      return 4;
    case Verdict::kLaunchError:
    case Verdict::kRuntimeError:
    case Verdict::kTimeout:
    case Verdict::kMemoryViolation:
      return 3;
    case Verdict::kCompileError:
    case Verdict::kUnsupported:
      return 2;
    case Verdict::kFormatError:
      return 1;
    case Verdict::kSandboxError:
      return 0;
  }
  return 0;
}

}  // namespace leap::rl
