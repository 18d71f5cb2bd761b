// Confinement of a sandbox worker (docs/design.md, Isolation): what a worker may still do once it
// has loaded everything it needs, enforced by the kernel rather than by a text filter.
//
// A worker locks itself down after its warm-up (an NVRTC compile, and on a GPU its CUDA
// context) and before it says it is ready, in this order:
//  1. user: from root to `sandbox.user` (default nobody): no capabilities, no root-owned writes;
//  2. files (Landlock): read-only access to the CUDA headers NVRTC includes (and, on a GPU, the
//     driver's device files and the libraries it may still load); no writes anywhere; on ABI 6+
//     no signals to processes outside the worker and no abstract Unix sockets;
//  3. system calls (seccomp-bpf): no new sockets, no execve, no ptrace or process_vm_*, no
//     mount or namespace changes, no fork (threads only), no kernel modules, bpf or io_uring.
//     A forbidden call kills the process with SIGSYS; the supervisor turns that into the
//     candidate's RUNTIME_ERROR ("forbidden system call").
// Landlock hides the contents of files, not whether a path exists: `__has_include` in a
// candidate can still tell whether a path is there.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace leap::sandbox {

// What the running kernel offers; probed without changing the calling process.
struct ConfinementSupport {
  int landlock_abi = 0;  // 0: no Landlock (kernel without it, or disabled at boot)
  bool seccomp = false;  // seccomp-bpf filters can be installed
  std::string landlock_error;
  std::string seccomp_error;
  bool complete() const { return landlock_abi > 0 && seccomp; }
  // One line for the start-up log, e.g. "Landlock ABI 7, seccomp-bpf".
  std::string describe() const;
};
ConfinementSupport probe_confinement();

// OK when `support` is complete; otherwise invalid_input (exit 2) naming what is missing and
// sandbox.confine=off as the explicit override.
Status require_confinement(const ConfinementSupport& support);

// Environment variables a worker keeps (everything else, API tokens included, never reaches it);
// CUDA_CACHE_DISABLE=1 is added so no JIT cache is written.
std::vector<std::string> worker_environment(char* const* parent_environment);

struct ConfinementPlan {
  std::string user = "nobody";  // taken when started as root; ignored otherwise
  bool gpu = false;             // also allow the GPU driver's files
  // Folders readable after lock-down, besides the fixed GPU ones (the CUDA include folder).
  std::vector<std::string> read_only;
};

// Applies the three steps to the calling process (irreversible). Returns one line saying what
// was applied. Fails when a step cannot be applied: the worker must then not serve jobs.
Expected<std::string> confine_self(const ConfinementPlan& plan);

// The feedback given to a candidate whose worker the filter killed.
inline constexpr const char* kForbiddenSyscallFeedback =
    "forbidden system call: the sandbox's filter killed the process (a kernel never needs "
    "system calls; the compiler and runtime were set up before your code ran)";

}  // namespace leap::sandbox
