// The CUDA context object: the device, the streams and events, and the cuBLASLt handle with its
// workspace, owned by one object that the CUDA backend and the NCCL reducer are given (no
// globals). Work is ordered on two streams:
//  - compute: every op of the backend, in issue order (so host-staged inputs may be reused as
//    soon as an op returns, and ops need no events between them);
//  - comm: the gradient all-reduce, which waits on an event recorded on compute after a bucket's
//    gradients are final, so communication overlaps the rest of the backward.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "common/status.h"

namespace leap::cuda {

// Whether this build holds a kernel image the current device can run (cudaSuccess), or
// cudaErrorNoKernelImageForDevice when its architecture is not among CMAKE_CUDA_ARCHITECTURES.
cudaError_t probe_kernel_image();

class CudaContext {
 public:
  // Fails (no device, or a device index out of range) with a message that says which.
  static Expected<std::unique_ptr<CudaContext>> create(int device, size_t workspace_bytes);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  cudaStream_t compute() const { return compute_; }
  cudaStream_t comm() const { return comm_; }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  const cudaDeviceProp& properties() const { return props_; }

  // Makes the comm stream wait for everything issued on compute so far.
  void comm_waits_for_compute();

 private:
  CudaContext() = default;
  int device_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace leap::cuda
