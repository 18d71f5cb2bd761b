// `[sandbox]` options (docs/design.md, Isolation and Verification defaults) and `[check]`, the
// options of `leap check`. Declared once here; the supervisor passes the worker its section on
// the worker's command line, so both sides read the same values through the same declaration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "sandbox/launch_plan.h"

namespace leap::sandbox {

struct SandboxConfig {
  int workers = 2;
  std::string device = "auto";  // auto | cpu | gpu
  int gpu_index = 0;            // which visible GPU this rank's GPU workers use
  double compile_timeout_s = 60;
  double run_timeout_s = 60;
  int trials = 3;
  int64_t seed = 20260801;  // trial inputs; fixed so reference outputs can be cached
  int feedback_bytes = 2048;
  int compile_error_lines = 20;
  int64_t instruction_budget = 500'000'000;
  double noise_band = 0.05;
  double reverify_speedup = 20.0;
  int64_t reference_cache_mb = 512;
  int64_t input_cache_mb = 1024;  // per worker: the trials' generated inputs (job_runner.h)
  int64_t result_cache_entries = 4096;
  // Worker resource limits (setrlimit at the worker's start; 0 = leave as inherited).
  int64_t limit_cpu_s = 300;   // CPU seconds per job
  int64_t limit_file_mb = 64;  // largest file a worker may write
  int64_t limit_open_files = 256;
  int64_t limit_memory_mb = 16384;  // address space of CPU workers; GPU workers get none
  // Confinement (confinement.h): on, or off only as an explicit, logged override.
  std::string confine = "on";
  std::string user = "nobody";  // the worker's user when the rank runs as root
  // Launch-plan bounds.
  int64_t max_dynamic_shared_bytes = 48 * 1024;
  int64_t max_scratch_mb = 256;
  int max_launches = 16;
  // Benchmarks only (sandbox_service.h): latency standing in for GPU trials; 0 = off.
  double simulated_exec_ms = 0;

  void declare(OptionSet& opts);
  PlanLimits plan_limits() const;
  // The `--sandbox.key=value` arguments that reproduce this config (for the worker's argv).
  std::vector<std::string> to_args() const;
};

// Resolves `sandbox.device` given the number of visible GPUs (cuda::probe_devices, passed in:
// this module does not depend on the CUDA one): "auto" is "gpu" when there is one, else "cpu";
// "gpu" without one is invalid_input saying why (never a silent fallback to the CPU).
Expected<std::string> resolve_device(const std::string& requested, int gpu_count,
                                     const std::string& no_gpu_reason);

struct CheckConfig {
  std::string task;
  std::string answer;
  void declare(OptionSet& opts);
};

}  // namespace leap::sandbox
