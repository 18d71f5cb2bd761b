// ComputeCopies: the bf16 compute copies of fp32 master weights that the GEMMs read.
//
// The backend interface passes weights as fp32 buffers (the master weights the optimizer
// updates). The first GEMM that reads a weight range makes its bf16 copy; later GEMMs reuse it
// until the range is written again. Weights change only through the backend's memory ops
// (upload, copy, zero) and adamw_update, and those call invalidate() on the range they write, so
// a copy is never stale. Copies are keyed by the weight's start address and length (a weight is
// a view into the parameter arena; different views never share a start address with a different
// length in practice, and a mismatch simply makes a new copy).
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <map>
#include <utility>

#include "cuda/cuda_context.h"
#include "cuda/range_overlap.h"

namespace leap::cuda {

class ComputeCopies {
 public:
  explicit ComputeCopies(CudaContext& ctx) : ctx_(&ctx) {}
  ~ComputeCopies();
  ComputeCopies(const ComputeCopies&) = delete;
  ComputeCopies& operator=(const ComputeCopies&) = delete;

  // The bf16 copy of w[0, n), made (or refreshed) on the compute stream when needed.
  const __nv_bfloat16* get(const float* w, size_t n);
  // Marks every copy that overlaps [p, p + n) stale.
  void invalidate(const float* p, size_t n);
  // Drops every copy inside [p, p + n) (the memory is being freed).
  void forget(const float* p, size_t n);
  size_t count() const { return copies_.size(); }

 private:
  struct Copy {
    size_t n = 0;
    __nv_bfloat16* data = nullptr;
    bool stale = true;
  };
  CudaContext* ctx_;
  std::map<const float*, Copy> copies_;
  size_t longest_ = 0;  // the longest copy ever made (for_each_overlap's bound)
};

}  // namespace leap::cuda
