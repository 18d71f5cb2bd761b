// The policy's backend, chosen by `backend.name`: the CPU backend (fp32, the reference) or the
// CUDA backend on this rank's GPU, with the CUDA context it runs in. The gradient reduction
// follows the backend (mpi/grad_reducer.h). A choice this build or machine cannot honour is
// bad input (exit code 2) with the fix, decided before anything is built.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/status.h"
#include "cuda/device_probe.h"
#ifdef LEAP_HAVE_CUDA
#include "cuda/cuda_context.h"
#endif

namespace leap::app {

struct PolicyBackend {
#ifdef LEAP_HAVE_CUDA
  std::unique_ptr<cuda::CudaContext> cuda;  // declared first: it outlives the backend
#endif
  std::unique_ptr<backend::Backend> backend;
};

// cuda needs a build with CUDA and NCCL and a visible device; cpu always works.
Status check_backend_choice(const std::string& name, const cuda::DeviceInfo& devices);

// `threads` is for the CPU backend (0: the libraries' default); `device` the GPU for cuda.
Expected<PolicyBackend> make_policy_backend(const std::string& name, int threads, int device);

}  // namespace leap::app
