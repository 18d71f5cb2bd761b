// Verdict names, in enum order (HDF5 stores the enum value with these names as an attribute).
#include "sandbox/verdict.h"

namespace leap::sandbox {

namespace {
constexpr std::string_view kNames[kVerdictCount] = {
    "OK",           "FORMAT_ERROR", "COMPILE_ERROR",    "LAUNCH_ERROR", "RUNTIME_ERROR",
    "TIMEOUT",      "WRONG_ANSWER", "MEMORY_VIOLATION", "UNSUPPORTED",  "SANDBOX_ERROR",
};
}

std::string_view verdict_name(Verdict v) { return kNames[static_cast<int>(v)]; }

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (int i = 0; i < kVerdictCount; ++i)
    if (kNames[i] == name) return static_cast<Verdict>(i);
  return std::nullopt;
}

}  // namespace leap::sandbox
