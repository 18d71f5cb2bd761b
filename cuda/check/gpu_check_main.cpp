// leap_gpu_check: the self-contained GPU check program of the GPU-only build (it needs only the
// CUDA toolkit). `leap_gpu_check CHECK [--key=value ...]` runs one check or benchmark and prints
// its results as one JSON object on stdout; benchmarks/gpu_check.sh runs them all.
// Exit codes: 0 ran, 1 failed (a check's tolerance or a CUDA error), 2 bad arguments,
// 3 skipped (no device, or a check of a tier this build left out).
#include <cstdio>
#include <cstring>
#include <string>

#include "cuda/check/checks.h"

namespace {

constexpr int kExitSkipped = 3;

void print_usage(const std::vector<leap::cuda::check::CheckSpec>& checks) {
  std::fprintf(stderr, "usage: leap_gpu_check CHECK [--key=value ...]\nchecks:\n");
  for (const auto& c : checks) {
    std::fprintf(stderr, "  %-14s %s\n%s", c.name.c_str(), c.help.c_str(),
                 leap::cuda::check::describe_args(c.args).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace leap::cuda::check;
  const auto checks = all_checks();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(checks);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : checks) {
    if (c.name != argv[1]) continue;
    auto args = CheckArgs::parse(c.args, argc, argv, 2);
    if (!args) {
      std::fprintf(stderr, "leap_gpu_check %s: %s\n", argv[1], args.status().message().c_str());
      return 2;
    }
    auto result = c.run(*args);
    if (!result) {
      const leap::Status& st = result.status();
      std::fprintf(stderr, "leap_gpu_check %s: %s\n", argv[1], st.message().c_str());
      if (st.code() == leap::StatusCode::kUnsupported) return kExitSkipped;
      return st.exit_code();
    }
    std::printf("%s\n", result->str().c_str());
    return result->failed() ? 1 : 0;
  }
  for (const auto& a : absent_checks()) {
    if (a.name != argv[1]) continue;
    std::fprintf(stderr, "leap_gpu_check %s: SKIPPED: %s\n", argv[1], a.reason.c_str());
    return kExitSkipped;
  }
  std::fprintf(stderr, "leap_gpu_check: unknown check '%s'\n", argv[1]);
  print_usage(checks);
  return 2;
}
