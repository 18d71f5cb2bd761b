// `leap_gpu_check executor`: the sandbox's GPU executor through the verifier, as a sandbox rank
// runs it (in-process here: LocalChannel). Each of the first --tasks tasks of the suite has its
// trusted reference verified against itself: the verdict must be OK, and the timed speedup
// (reference time / candidate time, docs/design.md's GPU timing) must be near 1, since both run the
// same kernel; the figures show the timing's noise and the cost of one verification.
// `leap_gpu_check executor_confined` does the same after confining the process as a GPU
// sandbox worker confines itself (warm-up, user, Landlock, seccomp; docs/design.md, Isolation), so
// the GPU rules are shown to let the driver work; gpu_check.sh runs it under strace to record
// what a confined GPU worker touches.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cuda/check/checks.h"
#include "cuda/device_probe.h"
#include "cuda/gpu_executor.h"
#include "sandbox/confinement.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_main.h"
#include "tasks/suite.h"

namespace leap::cuda::check {

namespace {

Expected<JsonRecord> verify_references(const CheckArgs& args, bool confine) {
  LEAP_ASSIGN_OR_RETURN(long long want, args.integer("tasks"));
  LEAP_ASSIGN_OR_RETURN(DeviceInfo dev, probe_devices());
  if (dev.count == 0) return unsupported("no CUDA device: " + dev.reason);
  LEAP_ASSIGN_OR_RETURN(tasks::Suite suite, tasks::load_suite(args.str("suite")));
  sandbox::SandboxConfig config;
  config.device = "gpu";
  // Confined as a `leap worker --sandbox.device=gpu` is: its resource limits (open files, file
  // size, no core dumps) before the driver starts, then Landlock and seccomp after the warm-up.
  if (confine) LEAP_RETURN_IF_ERROR(sandbox::apply_worker_limits(config, true));
  auto compiler = std::make_shared<sandbox::NvrtcCompiler>();
  LEAP_ASSIGN_OR_RETURN(auto executor, make_gpu_executor(compiler, 0));
  JsonRecord r;
  if (confine) {
    // A machine whose kernel lacks Landlock or seccomp cannot show confinement: not a failure
    // of the check (a production worker there refuses to start unless sandbox.confine=off).
    if (const sandbox::ConfinementSupport support = sandbox::probe_confinement(); !support.complete())
      return unsupported("this kernel cannot confine a worker: " + support.describe());
    LEAP_RETURN_IF_ERROR(sandbox::warm_up(*executor));
    LEAP_ASSIGN_OR_RETURN(std::string how,
                          sandbox::confine_worker(config, true, compiler->cuda_include_dir()));
    // The marker scripts/record_worker_access.sh splits the trace at.
    std::fprintf(stderr, "confined: %s\n", how.c_str());
    r.set("confinement", how);
  }
  sandbox::LocalChannel channel(std::move(executor));
  sandbox::Verifier verifier(channel, config);
  int ok = 0, n = 0;
  double min_speedup = 1e30, max_speedup = 0, wall_s = 0;
  for (const auto& task : suite.tasks) {
    if (n == want) break;
    ++n;
    const auto t0 = std::chrono::steady_clock::now();
    sandbox::VerifyResult v = verifier.verify(task, task.reference);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    wall_s += s;
    const bool good = v.verdict == sandbox::Verdict::kOk;
    ok += good;
    const double speedup = v.speedup.value_or(0.0);
    if (good) {
      min_speedup = std::min(min_speedup, speedup);
      max_speedup = std::max(max_speedup, speedup);
    }
    JsonRecord one;
    one.set("verdict", std::string(sandbox::verdict_name(v.verdict)))
        .set("speedup", speedup)
        .set("compile_ms", v.compile_ms)
        .set("exec_ms", v.exec_ms)
        .set("verify_s", s);
    r.set(task.id, one);
    std::fprintf(stderr, "  %-28s %-14s speedup %.3f compile %.1f ms exec %.3f ms (%.2f s)\n",
                 task.id.c_str(), std::string(sandbox::verdict_name(v.verdict)).c_str(), speedup,
                 v.compile_ms, v.exec_ms, s);
    if (!good) std::fprintf(stderr, "    %s\n", v.feedback.c_str());
  }
  r.set("tasks", n).set("ok", ok).set("mean_verify_s", n ? wall_s / n : 0.0);
  r.set("min_speedup", ok ? min_speedup : 0.0).set("max_speedup", max_speedup);
  // The speedups (each reference timed against itself, ideally 1) are figures to read, not a
  // gate: a busy GPU must not fail the check. Only a wrong verdict does.
  if (ok != n)
    r.mark_failed();
  else
    r.set("pass", true);
  return r;
}

}  // namespace

Expected<JsonRecord> run_executor(const CheckArgs& args) { return verify_references(args, false); }

Expected<JsonRecord> run_executor_confined(const CheckArgs& args) {
  return verify_references(args, true);
}

}  // namespace leap::cuda::check
