// The checks and benchmarks of leap_gpu_check, one function each. Each returns a JsonRecord of
// its results (printed on stdout, so benchmarks/gpu_check.sh can keep it in RESULTS_DIR) or the
// Status that says why it could not run. Progress and tables for people go to stderr.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/check/check_args.h"
#include "cuda/check/json_record.h"

namespace leap::cuda::check {

struct CheckSpec {
  std::string name;
  std::string help;
  std::vector<ArgSpec> args;
  Expected<JsonRecord> (*run)(const CheckArgs& args);
};

// Every check this build has (the model-tier ones only where the model library was built).
std::vector<CheckSpec> all_checks();

// The checks of a tier this build left out, each with why (cmake/gpu_only.cmake): asking for
// one is SKIPPED (exit 3), not a failure, since the build chose not to have it.
struct AbsentCheck {
  std::string name;
  std::string reason;
};
std::vector<AbsentCheck> absent_checks();

Expected<JsonRecord> run_info(const CheckArgs& args);
Expected<JsonRecord> run_ops(const CheckArgs& args);
Expected<JsonRecord> run_nccl(const CheckArgs& args);
Expected<JsonRecord> run_gemm(const CheckArgs& args);
#ifdef LEAP_CHECK_HAS_MODEL
Expected<JsonRecord> run_train(const CheckArgs& args);
Expected<JsonRecord> run_decode(const CheckArgs& args);
#endif
#ifdef LEAP_CHECK_HAS_SANDBOX
Expected<JsonRecord> run_executor(const CheckArgs& args);
Expected<JsonRecord> run_executor_confined(const CheckArgs& args);
#endif

}  // namespace leap::cuda::check
