// make_policy_backend and the checks that make backend.name = cuda an exit-2 error where it
// cannot run.
#include "apps/policy_backend.h"

#include "backend/cpu_backend.h"
#ifdef LEAP_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace leap::app {

namespace {
// The cuBLASLt workspace: what its heuristics ask for at most on Hopper for large GEMMs.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
}  // namespace

Status check_backend_choice(const std::string& name, const cuda::DeviceInfo& devices) {
  if (name != "cuda") return Status::ok();
#if !defined(LEAP_HAVE_CUDA) || !defined(LEAP_HAVE_NCCL)
  (void)devices;
  return invalid_input(
      "backend.name = cuda, but this leap was built without CUDA and NCCL (nvcc not found, or "
      "LEAP_CUDA=OFF): rebuild with the CUDA toolkit, or use backend.name = cpu");
#else
  if (devices.count == 0) {
    return invalid_input("backend.name = cuda, but there is no usable GPU here (" + devices.reason +
                         "): use backend.name = cpu");
  }
  return Status::ok();
#endif
}

Expected<PolicyBackend> make_policy_backend(const std::string& name, int threads, int device) {
  PolicyBackend out;
  if (name == "cpu") {
    out.backend = std::make_unique<backend::CpuBackend>(threads);
    return out;
  }
#ifdef LEAP_HAVE_CUDA
  if (name == "cuda") {
    LEAP_ASSIGN_OR_RETURN(
        out.cuda, cuda::CudaContext::create(device < 0 ? 0 : device, kCublasWorkspaceBytes));
    out.backend = std::make_unique<cuda::CudaBackend>(*out.cuda);
    return out;
  }
#endif
  (void)device;
  return invalid_input("backend.name = " + name + " is not available in this build: use cpu");
}

}  // namespace leap::app
