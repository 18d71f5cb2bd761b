// The GPU executor of the sandbox: NVRTC compiles an answer to a CUBIN for this device's
// sm_XX, which is loaded with cudaLibraryLoadData and launched with cudaLaunchKernel. Only the
// runtime API is used (never libcuda), so binaries start on machines without a driver.
//
// Invariants:
//  - argument layout comes from the kernel's PTX parameter list (the same NVRTC source compiled
//    to PTX, through the shared compile cache), as on the CPU path;
//  - every buffer gets guard zones (guard_bytes), because a GPU does not check accesses, and is
//    zeroed before it is freed, so no job finds another's data in reused device memory;
//  - one stream: every fill, copy, launch, flush and event of the executor goes on its own
//    non-blocking stream, so a kernel always sees its inputs and guard bytes written (the legacy
//    default stream does not order against a non-blocking one);
//  - a failure of the executor's own calls (events, the L2 flush) is SANDBOX_ERROR, never
//    charged to the candidate;
//  - any error at a synchronisation marks the executor broken: the CUDA context may be
//    corrupted, so the worker replies and exits, and the supervisor starts a fresh one;
//  - timing (docs/design.md): warm-ups, then at least 10 timed runs or 25 ms, an L2 flush before
//    each, CUDA events, the median; under an exclusive lock on the device, so no other worker
//    of this machine runs on it meanwhile (others hold the lock shared while they run).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "sandbox/executor.h"
#include "sandbox/nvrtc_compiler.h"

namespace leap::cuda {

// Creates the executor on device `device` (an index into the visible devices). Fails without a
// device. Only in builds with CUDA (LEAP_HAVE_CUDA).
Expected<std::unique_ptr<sandbox::Executor>> make_gpu_executor(
    std::shared_ptr<sandbox::NvrtcCompiler> compiler, int device = 0);

}  // namespace leap::cuda
