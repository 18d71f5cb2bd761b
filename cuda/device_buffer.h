// DeviceBuffer: a grow-only device allocation for scratch (bf16 operand copies, staged integer
// arrays, reduction partials), taken from the stream-ordered pool of the stream that uses it.
// Growing frees the old block and allocates the new one in stream order (cudaFreeAsync,
// cudaMallocAsync), so work already queued that reads the old block finishes first, and nothing
// waits for the whole device: a plain cudaFree would stall the NCCL buckets in flight on the
// comm stream during the backward.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/cuda_check.h"

namespace leap::cuda {

class DeviceBuffer {
 public:
  // The buffer belongs to `stream`: only work on that stream (or ordered after it) may use it.
  explicit DeviceBuffer(cudaStream_t stream = nullptr) : stream_(stream) {}
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void set_stream(cudaStream_t stream) { stream_ = stream; }

  // At least `bytes` bytes (256-byte aligned, as the pool gives); contents are not kept.
  void* reserve(size_t bytes) {
    if (bytes > capacity_) {
      if (ptr_ != nullptr) CUDA_CHECK(cudaFreeAsync(ptr_, stream_));
      ptr_ = nullptr;
      CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream_));
      capacity_ = bytes;
    }
    return ptr_;
  }
  template <class E>
  E* reserve_as(size_t n) {
    return static_cast<E*>(reserve(n * sizeof(E)));
  }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace leap::cuda
