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
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaGetDeviceProperties(&ctx->props_, device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->compute_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->comm_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&ctx->compute_done_, cudaEventDisableTiming));
  CUBLAS_CHECK(cublasLtCreate(&ctx->lt_));
  ctx->workspace_bytes_ = workspace_bytes;
  if (workspace_bytes > 0) CUDA_CHECK(cudaMalloc(&ctx->workspace_, workspace_bytes));
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
