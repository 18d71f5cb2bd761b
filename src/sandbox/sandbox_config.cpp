// Declarations of the [sandbox] and [check] options.
#include "sandbox/sandbox_config.h"

#include <fmt/format.h>

namespace leap::sandbox {

void SandboxConfig::declare(OptionSet& o) {
  o.add("sandbox.workers", &workers, 2,
        "Worker processes per sandbox rank (compile and run candidates).", {.min = 1, .max = 256});
  o.add("sandbox.device", &device, std::string("auto"),
        "Where candidates run: gpu (timed), cpu (the PTX interpreter) or auto (gpu when one is "
        "visible).",
        {.choices = {"auto", "cpu", "gpu"}, .alias = "device"});
  o.add(
      "sandbox.gpu_index", &gpu_index, 0,
      "GPU (index among the visible ones) of this rank's GPU workers; the distributed run sets it "
      "from the rank's GPU binding.",
      {.min = 0, .max = 1023});
  // At most a day: far larger values overflowed the deadline's clock arithmetic, so that every job
  // timed out at once.
  o.add("sandbox.compile_timeout_s", &compile_timeout_s, 60.0,
        "Wall-clock limit for compiling one job; past it the worker is killed (TIMEOUT).",
        {.min = 0.001, .max = 86400.0});
  o.add("sandbox.run_timeout_s", &run_timeout_s, 60.0,
        "Wall-clock limit for running one job's trials; past it the worker is killed (TIMEOUT).",
        {.min = 0.001, .max = 86400.0});
  o.add("sandbox.trials", &trials, 3, "Trials per candidate, each with fresh seeded inputs.",
        {.min = 3, .max = 100});
  o.add("sandbox.seed", &seed, int64_t{20260801},
        "Seed of the trial inputs (fixed, so the reference outputs are computed once and cached).");
  o.add("sandbox.feedback_bytes", &feedback_bytes, 2048, "Longest feedback text for the next turn.",
        {.min = 128, .max = 1 << 20});
  o.add("sandbox.compile_error_lines", &compile_error_lines, 20,
        "Compiler error lines kept in feedback.", {.min = 1, .max = 1000});
  o.add("sandbox.instruction_budget", &instruction_budget, int64_t{500'000'000},
        "PTX interpreter: thread-instructions per launch before a deterministic TIMEOUT.",
        {.min = 1000});
  o.add("sandbox.noise_band", &noise_band, 0.05,
        "Relative speed difference within which two kernels count as equally fast.",
        {.min = 0, .max = 1});
  o.add("sandbox.reverify_speedup", &reverify_speedup, 20.0,
        "A speedup above this is re-verified with new inputs before it is believed.", {.min = 1});
  o.add("sandbox.reference_cache_mb", &reference_cache_mb, int64_t{512},
        "Memory for cached reference outputs (per task, trial and sizes).", {.min = 0});
  o.add("sandbox.input_cache_mb", &input_cache_mb, int64_t{1024},
        "Memory each worker keeps for the trial inputs it generated (per task, sizes, seed and "
        "trial), so a task's later jobs on the worker do not draw them again; 0 turns this off. "
        "GPU-sized inputs are up to hundreds of MB a trial.",
        {.min = 0});
  o.add("sandbox.result_cache_entries", &result_cache_entries, int64_t{4096},
        "Verdicts kept for answers already seen (same task, same code); 0 turns this off.",
        {.min = 0});
  o.add("sandbox.limit_cpu_s", &limit_cpu_s, int64_t{300},
        "Worker CPU seconds per job (RLIMIT_CPU; 0 = none).", {.min = 0});
  o.add("sandbox.limit_file_mb", &limit_file_mb, int64_t{64},
        "Largest file a worker may write (RLIMIT_FSIZE).", {.min = 0});
  o.add("sandbox.limit_open_files", &limit_open_files, int64_t{256},
        "Open files per worker (RLIMIT_NOFILE).", {.min = 0});
  o.add("sandbox.limit_memory_mb", &limit_memory_mb, int64_t{16384},
        "Address space of a CPU worker (RLIMIT_AS; GPU workers get none: CUDA needs the space).",
        {.min = 0});
  o.add("sandbox.confine", &confine, std::string("on"),
        "Confine every worker after its warm-up: Landlock (read-only CUDA headers, no writes), a "
        "seccomp filter (no sockets, exec, ptrace, mount) and an unprivileged user. off runs "
        "workers unconfined (logged); only for kernels without Landlock or seccomp.",
        {.choices = {"on", "off"}});
  o.add("sandbox.user", &user, std::string("nobody"),
        "User the workers switch to when the rank runs as root (confinement on).");
  o.add("sandbox.max_dynamic_shared_bytes", &max_dynamic_shared_bytes, int64_t{48 * 1024},
        "Largest dynamic shared memory a launch line may ask for.", {.min = 0, .max = 228 * 1024});
  o.add("sandbox.max_scratch_mb", &max_scratch_mb, int64_t{256},
        "Scratch buffers of one answer, in all.", {.min = 0});
  o.add("sandbox.max_launches", &max_launches, 16, "Launch lines per answer.",
        {.min = 1, .max = 1024});
  o.add("sandbox.simulated_exec_ms", &simulated_exec_ms, 0.0,
        "Benchmarks only: sleep this long after every candidate that ran, holding its slot, to stand "
        "in for timed GPU trials on a CPU machine. Labelled in the run's output; leap eval refuses it.",
        {.min = 0, .max = 600000});
}

PlanLimits SandboxConfig::plan_limits() const {
  PlanLimits l;
  l.max_dynamic_shared_bytes = max_dynamic_shared_bytes;
  l.max_scratch_bytes = max_scratch_mb << 20;
  l.max_launches = max_launches;
  return l;
}

std::vector<std::string> SandboxConfig::to_args() const {
  return {
      fmt::format("--sandbox.workers={}", workers),
      fmt::format("--sandbox.device={}", device),
      fmt::format("--sandbox.gpu_index={}", gpu_index),
      fmt::format("--sandbox.compile_timeout_s={}", compile_timeout_s),
      fmt::format("--sandbox.run_timeout_s={}", run_timeout_s),
      fmt::format("--sandbox.trials={}", trials),
      fmt::format("--sandbox.seed={}", seed),
      fmt::format("--sandbox.feedback_bytes={}", feedback_bytes),
      fmt::format("--sandbox.compile_error_lines={}", compile_error_lines),
      fmt::format("--sandbox.instruction_budget={}", instruction_budget),
      fmt::format("--sandbox.noise_band={}", noise_band),
      fmt::format("--sandbox.reverify_speedup={}", reverify_speedup),
      fmt::format("--sandbox.reference_cache_mb={}", reference_cache_mb),
      fmt::format("--sandbox.input_cache_mb={}", input_cache_mb),
      fmt::format("--sandbox.result_cache_entries={}", result_cache_entries),
      fmt::format("--sandbox.limit_cpu_s={}", limit_cpu_s),
      fmt::format("--sandbox.limit_file_mb={}", limit_file_mb),
      fmt::format("--sandbox.limit_open_files={}", limit_open_files),
      fmt::format("--sandbox.limit_memory_mb={}", limit_memory_mb),
      fmt::format("--sandbox.confine={}", confine),
      fmt::format("--sandbox.user={}", user),
      fmt::format("--sandbox.max_dynamic_shared_bytes={}", max_dynamic_shared_bytes),
      fmt::format("--sandbox.max_scratch_mb={}", max_scratch_mb),
      fmt::format("--sandbox.max_launches={}", max_launches),
      fmt::format("--sandbox.simulated_exec_ms={}", simulated_exec_ms),
  };
}

Expected<std::string> resolve_device(const std::string& requested, int gpu_count,
                                     const std::string& no_gpu_reason) {
  if (requested == "cpu") return std::string("cpu");
  if (gpu_count > 0) return std::string("gpu");
  if (requested == "gpu")
    return invalid_input("sandbox.device=gpu but there is no GPU: " + no_gpu_reason +
                         " (use --device cpu to run on the PTX interpreter)");
  return std::string("cpu");
}

void CheckConfig::declare(OptionSet& o) {
  o.add("check.task", &task, std::string(), "Task id to check the answer against (leap check).",
        {.alias = "task"});
  o.add("check.answer", &answer, std::string(),
        "File holding the answer: a completion with a ```cuda block.", {.alias = "answer"});
}

}  // namespace leap::sandbox
