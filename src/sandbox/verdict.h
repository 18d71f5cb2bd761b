// Verdicts: what the sandbox says of one candidate. Names are a contract (docs/design.md,
// Verification): they are written to HDF5 by these exact strings and read by the RL core.
// SANDBOX_ERROR is the infrastructure's fault: never a penalty, always retried.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leap::sandbox {

enum class Verdict : int {
  kOk = 0,
  kFormatError,
  kCompileError,
  kLaunchError,
  kRuntimeError,
  kTimeout,
  kWrongAnswer,
  kMemoryViolation,
  kUnsupported,
  kSandboxError,
};
inline constexpr int kVerdictCount = 10;
// A count per verdict, indexed by the enum value (eval reports and run summaries).
using VerdictCounts = std::array<int64_t, kVerdictCount>;

// "OK", "FORMAT_ERROR", ...; the index is the enum value.
std::string_view verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view name);

// The result of verifying one candidate. Times are wall-clock milliseconds; speedup is the
// reference's time over the candidate's, present only where the kernel was timed on a GPU.
struct VerifyResult {
  Verdict verdict = Verdict::kSandboxError;
  double max_abs_err = 0.0;
  std::optional<double> speedup;
  double compile_ms = 0.0;
  double exec_ms = 0.0;
  double slot_ms = 0.0;  // how long the job held a SandboxService slot (0 outside submit())
  // This verification ran the task's reference first: its outputs for these trials were not in
  // the reference cache (sandbox.reference_cache_mb). Counted in leap train's summary.
  bool reference_ran = false;
  std::string feedback;  // bounded text for the next turn (docs/design.md: at most 2 KB by default)
};

}  // namespace leap::sandbox
