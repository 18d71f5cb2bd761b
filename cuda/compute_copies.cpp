// ComputeCopies: bf16 weight copies made on first use and refreshed after a write.
#include "cuda/compute_copies.h"

#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"

#include <algorithm>

namespace leap::cuda {

ComputeCopies::~ComputeCopies() {
  for (auto& [w, c] : copies_) cudaFree(c.data);
}

const __nv_bfloat16* ComputeCopies::get(const float* w, size_t n) {
  Copy& c = copies_[w];
  if (c.n != n) {
    // Stream-ordered, like the backend's scratch: no device-wide wait mid-backward.
    if (c.data != nullptr) CUDA_CHECK(cudaFreeAsync(c.data, ctx_->compute()));
    c.data = nullptr;
    CUDA_CHECK(cudaMallocAsync(&c.data, n * sizeof(__nv_bfloat16), ctx_->compute()));
    c.n = n;
    c.stale = true;
    longest_ = std::max(longest_, n);
  }
  if (c.stale) {
    launch_cast_to_bf16(c.data, w, n, ctx_->compute());
    c.stale = false;
  }
  return c.data;
}

void ComputeCopies::invalidate(const float* p, size_t n) {
  for_each_overlap(copies_, p, n, longest_, [](Copy& c) { c.stale = true; });
}

void ComputeCopies::forget(const float* p, size_t n) {
  auto it = copies_.lower_bound(p);
  while (it != copies_.end() && it->first < p + n) {
    cudaFreeAsync(it->second.data, ctx_->compute());
    it = copies_.erase(it);
  }
}

}  // namespace leap::cuda
