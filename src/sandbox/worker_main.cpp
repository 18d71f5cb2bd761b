// Worker process: limits, the ready frame, and the job loop. The CPU limit is re-armed before
// every job (soft RLIMIT_CPU = CPU used so far + the per-job allowance), so a long-lived worker
// is never killed for its history, and a runaway job meets SIGXCPU even if the wall-clock
// timeout of the supervisor were lost.
#include "sandbox/worker_main.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <new>

#include "common/sanitizers.h"
#include "sandbox/confinement.h"
#include "sandbox/job_runner.h"
#include "sandbox/nvrtc_compiler.h"
#include "sandbox/wire.h"

namespace leap::sandbox {

namespace {

// Threads that draw a trial's inputs: the CPUs this worker may run on (its rank's binding), at
// most 8. The values do not depend on it.
int input_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::clamp(CPU_COUNT(&set), 1, 8);
}

Status set_limit(int resource, rlim_t value, const char* name) {
  rlimit lim{};
  if (getrlimit(resource, &lim) != 0) return io_error(std::string("getrlimit ") + name);
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? value : std::min(value, lim.rlim_max);
  if (setrlimit(resource, &lim) != 0)
    return io_error(std::string("setrlimit ") + name + ": " + std::strerror(errno));
  return Status::ok();
}

void arm_cpu_limit(int64_t seconds) {
  if (seconds <= 0) return;
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  const rlim_t used = static_cast<rlim_t>(use.ru_utime.tv_sec + use.ru_stime.tv_sec) + 1;
  (void)set_limit(RLIMIT_CPU, used + static_cast<rlim_t>(seconds), "RLIMIT_CPU");
}

}  // namespace

Status apply_worker_limits(const SandboxConfig& config, bool gpu) {
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  // A worker is the first process the kernel's OOM killer takes: a hostile compile (a template
  // explosion within the compile timeout) or kernel must not cost a policy rank. GPU workers
  // have no RLIMIT_AS (the driver reserves terabytes of address space), so for them this is the
  // memory bound that remains. Raising one's own score needs no privilege; best effort.
  if (FILE* f = std::fopen("/proc/self/oom_score_adj", "w")) {
    std::fputs("1000", f);
    std::fclose(f);
  }
  // No PR_SET_PDEATHSIG: it fires when the spawning *thread* exits, and workers are respawned
  // from whichever thread saw the old one die. An orphaned worker sees end of file on its socket
  // instead (the supervisor's end closes when it exits) and stops after its current job.
  LEAP_RETURN_IF_ERROR(set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE"));
  if (config.limit_file_mb > 0)
    LEAP_RETURN_IF_ERROR(
        set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(config.limit_file_mb) << 20, "RLIMIT_FSIZE"));
  if (config.limit_open_files > 0)
    LEAP_RETURN_IF_ERROR(
        set_limit(RLIMIT_NOFILE, static_cast<rlim_t>(config.limit_open_files), "RLIMIT_NOFILE"));
  // ASan's and TSan's shadow memory alone is terabytes of address space (cmake/sanitizers.cmake).
  if (!gpu && config.limit_memory_mb > 0 && !kShadowMemorySanitizer)
    LEAP_RETURN_IF_ERROR(
        set_limit(RLIMIT_AS, static_cast<rlim_t>(config.limit_memory_mb) << 20, "RLIMIT_AS"));
  return Status::ok();
}

Status warm_up(Executor& executor) {
  static constexpr const char* kSource =
      "#include <cuda_fp16.h>\n"
      "__global__ void leap_warm_up(float* out) {\n"
      "  out[threadIdx.x] = __half2float(__float2half(1.0f));\n"
      "}\n";
  CompileOutcome c = executor.compile(kSource, {"leap_warm_up"});
  if (c.outcome.verdict == Verdict::kOk || !nvrtc_available()) return Status::ok();
  return internal_error("the warm-up compile failed: " + c.outcome.message);
}

Expected<std::string> confine_worker(const SandboxConfig& config, bool gpu,
                                     const std::string& cuda_include_dir) {
  if (config.confine != "on") return std::string("unconfined (sandbox.confine=off)");
  ConfinementPlan plan;
  plan.user = config.user;
  plan.gpu = gpu;
  if (!cuda_include_dir.empty()) plan.read_only.push_back(cuda_include_dir);
  return confine_self(plan);
}

int serve_jobs(Executor& executor, int fd, const SandboxConfig& config,
               const std::string& confinement) {
  const std::string ready = std::string(executor.name()) + "; " + confinement;
  if (!wire::write_frame(fd, wire::FrameType::kReady, ready)) return 1;
  JobRunner runner(executor, TimingOptions{}, static_cast<size_t>(config.input_cache_mb) << 20, input_threads());
  runner.set_run_timeout(config.run_timeout_s);
  runner.set_compiled_callback(
      [fd] { (void)wire::write_frame(fd, wire::FrameType::kCompiled, {}); });
  for (;;) {
    auto frame = wire::read_frame(fd, std::chrono::steady_clock::time_point::max());
    if (!frame) return frame.status().code() == StatusCode::kNotFound ? 0 : 1;
    if (frame->type != wire::FrameType::kRequest) return 1;
    auto request = wire::decode_request(frame->payload);
    if (!request) return 1;
    arm_cpu_limit(config.limit_cpu_s);
    JobReport report;
    try {
      report = runner.run(*request);
    } catch (const std::bad_alloc&) {
      // The candidate asked for more memory than RLIMIT_AS (sandbox.limit_memory_mb) leaves: its
      // fault, so a verdict; a crashed worker would be a SANDBOX_ERROR, a void sample, which the
      // policy could learn to prefer to a failure. The worker then starts afresh.
      report = JobReport{};
      report.outcome = {Verdict::kRuntimeError,
                        "the kernel needed more memory than the sandbox allows its worker (sandbox.limit_memory_mb)"};
      report.failed_trial = 0;
      report.worker_exiting = true;
    }
    report.worker_exiting = report.worker_exiting || executor.broken();
    if (!wire::write_frame(fd, wire::FrameType::kReport, wire::encode_report(report))) return 1;
    if (report.worker_exiting) return 3;
  }
}

}  // namespace leap::sandbox
