// The worker side of the sandbox (`leap worker`, a hidden subcommand): a fresh process started
// by posix_spawn, which limits its own resources, says it is ready, and then runs one job at a
// time from its socket until the supervisor closes it. The executor is passed in (CPU here, GPU
// from cuda/), so this module does not depend on the CUDA one.
#pragma once

#include "common/status.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox_config.h"

namespace leap::sandbox {

// The socket a worker talks on: the supervisor places it at this descriptor.
inline constexpr int kWorkerFd = 3;

// RLIMIT_CORE 0, RLIMIT_FSIZE, RLIMIT_NOFILE, and RLIMIT_AS for CPU workers only (CUDA needs
// a large virtual address space); no new privileges.
Status apply_worker_limits(const SandboxConfig& config, bool gpu);

// Before confinement: compiles a small kernel that includes the toolkit's fp16 header, so that
// everything NVRTC loads lazily (libnvrtc-builtins) is loaded while files are still reachable.
// A failure is an error only where NVRTC exists.
Status warm_up(Executor& executor);

// Confines this process as `config` says (confinement.h). Returns the line the ready frame
// carries: what was applied, or that confinement is off.
Expected<std::string> confine_worker(const SandboxConfig& config, bool gpu,
                                     const std::string& cuda_include_dir);

// Serves jobs on `fd` until end of file. The ready frame carries the executor's name and
// `confinement`. Returns the process exit code: 0 on a clean end, 3 when the executor broke (a
// sticky device error) and the process must be replaced.
int serve_jobs(Executor& executor, int fd, const SandboxConfig& config,
               const std::string& confinement);

}  // namespace leap::sandbox
