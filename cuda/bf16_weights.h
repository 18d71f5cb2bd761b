// Bf16Weights: weight buffers whose matrices are stored in bf16 only (Backend::alloc_weights,
// optim.master_weights = optimizer), so that no rank holds an fp32 replica of the model.
//
// The backend interface passes weights as fp32 pointers into one flat buffer, and the model code
// does pointer arithmetic on them. So a buffer of n floats gets n * 4 bytes of device *virtual*
// address space (cuMemAddressReserve), of which only the tail is backed by memory: the fp32 norms
// and biases, mapped from the 2 MiB page that holds the first of them. The matrices' addresses
// have no memory behind them (a kernel that read them as fp32 would fault, not compute with
// garbage); their values live in a separate bf16 buffer, element i of the matrices at bf16
// element i. CudaBackend resolves an fp32 pointer into the matrices to its bf16 address: the
// GEMMs read it as their compute copy, the embedding looks rows up in it, and the memory ops
// (upload, download, copy, zero) convert on the way in and out.
//
// The driver's virtual-memory calls are reached through cudaGetDriverEntryPointByVersion, so a
// binary still starts on a machine without libcuda (cuda/CMakeLists.txt).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstddef>
#include <map>
#include <memory>

#include "cuda/cuda_context.h"

namespace leap::cuda {

class Bf16Weights {
 public:
  explicit Bf16Weights(CudaContext& ctx);
  ~Bf16Weights();
  Bf16Weights(const Bf16Weights&) = delete;
  Bf16Weights& operator=(const Bf16Weights&) = delete;

  // A zeroed buffer of n floats whose first bf16_floats are stored in bf16.
  float* allocate(size_t n, size_t bf16_floats);
  // Frees a buffer of allocate(); false (nothing done) for any other pointer.
  bool release(float* p);

  // The part of [p, p + n) that lies in a buffer's bf16 matrices: it is always a prefix of the
  // range (the matrices come first), `bf16` the address of its first element and `n` its length;
  // n = 0 when p is not in one. The rest of the range is ordinary fp32 memory.
  struct Part {
    __nv_bfloat16* bf16 = nullptr;
    size_t n = 0;
  };
  Part bf16_part(const float* p, size_t n) const;

 private:
  struct Buffer {
    size_t floats = 0, bf16_floats = 0;
    __nv_bfloat16* bf16 = nullptr;
    CUdeviceptr reserved = 0;  // == the buffer's fp32 address
    size_t reserved_bytes = 0;
    CUdeviceptr mapped = 0;  // the backed tail
    size_t mapped_bytes = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  struct Driver;  // the virtual-memory entry points, found on first use
  const Driver& driver();
  void free_buffer(Buffer& b);

  CudaContext* ctx_;
  std::map<const float*, Buffer> buffers_;
  std::unique_ptr<Driver> driver_;
};

}  // namespace leap::cuda
