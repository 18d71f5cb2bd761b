// `leap worker` (hidden): the sandbox's worker process. The supervisor (WorkerPool) starts it
// with posix_spawn and talks to it on descriptor sandbox::kWorkerFd; it limits its own
// resources first, then builds its executor (the PTX interpreter, or the GPU), warms NVRTC up,
// confines itself (Landlock, seccomp, an unprivileged user) and serves jobs.
#include <csignal>
#include <cstdio>
#include <memory>

#include "apps/subcommands.h"
#include "sandbox/cpu_executor.h"
#include "sandbox/worker_main.h"

#ifdef LEAP_HAVE_CUDA
#include "cuda/gpu_executor.h"
#endif

namespace leap::app {

int run_worker(const std::vector<std::string>& args) {
  // The early-stop signal is meant for the ranks (they checkpoint at a step boundary); a job-wide
  // USR1 must not kill the workers in the middle of a verification.
  std::signal(SIGUSR1, SIG_IGN);
  OptionSet opts;
  sandbox::SandboxConfig config;
  config.declare(opts);
  if (Status st = opts.parse(args); !st) return report_error("worker", st);
  const bool gpu = config.device == "gpu";
  if (Status st = sandbox::apply_worker_limits(config, gpu); !st) {
    std::fprintf(stderr, "leap worker: %s\n", st.message().c_str());
    return 1;
  }
  auto compiler = std::make_shared<sandbox::NvrtcCompiler>();
  std::unique_ptr<sandbox::Executor> executor;
  if (gpu) {
#ifdef LEAP_HAVE_CUDA
    auto made = cuda::make_gpu_executor(compiler, config.gpu_index);
    if (!made) {
      std::fprintf(stderr, "leap worker: %s\n", made.status().message().c_str());
      return 1;
    }
    executor = std::move(*made);
#else
    std::fprintf(stderr, "leap worker: this build has no CUDA: no GPU worker\n");
    return 1;
#endif
  } else {
    sandbox::CpuExecutorOptions o;
    o.instruction_budget = static_cast<uint64_t>(config.instruction_budget);
    executor = std::make_unique<sandbox::CpuExecutor>(compiler, o);
  }
  // Everything the worker loads is loaded before it locks itself down (confinement.h).
  if (Status st = sandbox::warm_up(*executor); !st) {
    std::fprintf(stderr, "leap worker: %s\n", st.message().c_str());
    return 1;
  }
  auto confined = sandbox::confine_worker(config, gpu, compiler->cuda_include_dir());
  if (!confined) {
    std::fprintf(stderr, "leap worker: confinement failed: %s\n",
                 confined.status().message().c_str());
    return 1;
  }
  return sandbox::serve_jobs(*executor, sandbox::kWorkerFd, config, *confined);
}

}  // namespace leap::app
