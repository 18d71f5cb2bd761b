// DeviceBuffer: a grow-only device allocation for scratch (bf16 operand copies, staged integer
// arrays, reduction partials). Growing frees the old block; cudaFree waits for the work that may
// still read it, so a buffer may be regrown between ops on the compute stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/cuda_check.h"

namespace leap::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes` bytes (256-byte aligned, as cudaMalloc gives); contents are not kept.
  void* reserve(size_t bytes) {
    if (bytes > capacity_) {
      CUDA_CHECK(cudaFree(ptr_));
      ptr_ = nullptr;
      CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      capacity_ = bytes;
    }
    return ptr_;
  }
  template <class E>
  E* reserve_as(size_t n) {
    return static_cast<E*>(reserve(n * sizeof(E)));
  }

 private:
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace leap::cuda
