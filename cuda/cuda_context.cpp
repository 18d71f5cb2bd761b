// CudaContext: creates and releases the device's streams, events, cuBLASLt handle and workspace.
#include "cuda/cuda_context.h"

#include <string>

#include "cuda/cuda_check.h"

namespace leap::cuda {

Expected<std::unique_ptr<CudaContext>> CudaContext::create(int device, size_t workspace_bytes) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    return unsupported(std::string("no CUDA device for the cuda backend (") +
                       (err == cudaSuccess ? "none visible" : cudaGetErrorString(err)) +
                       "): run with backend.name=cpu, or on a machine with an NVIDIA GPU");
  }
  if (device < 0 || device >= count) {
    return invalid_input("CUDA device " + std::to_string(device) + " does not exist (" +
                         std::to_string(count) + " visible)");
  }
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->device_ = device;
  // The first calls that can fail on a busy or full GPU (a device in exclusive-process mode
  // that another process holds; no memory left for the workspace) are the user's to fix: a
  // Status naming the device, not an abort.
  const std::string on = "CUDA device " + std::to_string(device) + ": ";
  auto cuda_failed = [&](const char* what, cudaError_t e) {
    cudaGetLastError();
    return invalid_input(on + what + " failed: " + cudaGetErrorString(e) +
                       " (is it in exclusive-process mode and taken by another process, or out of memory? "
                       "see nvidia-smi)");
  };
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&ctx->props_, device);
  if (e != cudaSuccess) return cuda_failed("selecting it", e);
  if (cudaError_t img = probe_kernel_image(); img != cudaSuccess) {
    cudaGetLastError();
    return invalid_input(on + "this leap has no kernels for its architecture sm_" +
                         std::to_string(ctx->props_.major) + std::to_string(ctx->props_.minor) + " (built for " +
                         LEAP_CUDA_ARCHS_BUILT + "; " + cudaGetErrorString(img) +
                         "): rebuild with LEAP_CUDA_ARCHS=\"" + std::to_string(ctx->props_.major) +
                         std::to_string(ctx->props_.minor) + "\" scripts/build.sh (or CMAKE_CUDA_ARCHITECTURES)");
  }
  e = cudaStreamCreateWithFlags(&ctx->compute_, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&ctx->comm_, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ctx->compute_done_, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_failed("creating its streams", e);
  if (cublasStatus_t st = cublasLtCreate(&ctx->lt_); st != CUBLAS_STATUS_SUCCESS)
    return invalid_input(on + "cublasLtCreate failed: " + cublasLtGetStatusString(st));
  ctx->workspace_bytes_ = workspace_bytes;
  if (workspace_bytes > 0) {
    e = cudaMalloc(&ctx->workspace_, workspace_bytes);
    if (e != cudaSuccess) return cuda_failed(("allocating the " + std::to_string(workspace_bytes >> 20) +
                                              " MiB GEMM workspace").c_str(), e);
  }
  return ctx;
}

CudaContext::~CudaContext() {
  // Errors are ignored here: a destructor may run while a fatal error is being reported.
  if (compute_) cudaStreamSynchronize(compute_);
  if (comm_) cudaStreamSynchronize(comm_);
  cudaFree(workspace_);
  if (lt_) cublasLtDestroy(lt_);
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (compute_) cudaStreamDestroy(compute_);
  if (comm_) cudaStreamDestroy(comm_);
}

void CudaContext::comm_waits_for_compute() {
  CUDA_CHECK(cudaEventRecord(compute_done_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(comm_, compute_done_, 0));
}

}  // namespace leap::cuda
