// ComputeCopies: bf16 weight copies made on first use and refreshed after a write.
#include "cuda/compute_copies.h"

#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"

namespace leap::cuda {

ComputeCopies::~ComputeCopies() {
  for (auto& [w, c] : copies_) cudaFree(c.data);
}

const __nv_bfloat16* ComputeCopies::get(const float* w, size_t n) {
  Copy& c = copies_[w];
  if (c.n != n) {
    CUDA_CHECK(cudaFree(c.data));
    c.data = nullptr;
    CUDA_CHECK(cudaMalloc(&c.data, n * sizeof(__nv_bfloat16)));
    c.n = n;
    c.stale = true;
  }
  if (c.stale) {
    launch_cast_to_bf16(c.data, w, n, ctx_->compute());
    c.stale = false;
  }
  return c.data;
}

void ComputeCopies::invalidate(const float* p, size_t n) {
  if (copies_.empty() || n == 0) return;
  // The first copy that may overlap starts at or before p.
  auto it = copies_.upper_bound(p);
  if (it != copies_.begin()) --it;
  for (; it != copies_.end() && it->first < p + n; ++it) {
    if (it->first + it->second.n > p) it->second.stale = true;
  }
}

void ComputeCopies::forget(const float* p, size_t n) {
  auto it = copies_.lower_bound(p);
  while (it != copies_.end() && it->first < p + n) {
    cudaFree(it->second.data);
    it = copies_.erase(it);
  }
}

}  // namespace leap::cuda
