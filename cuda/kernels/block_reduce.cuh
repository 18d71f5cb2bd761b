// Warp and block reductions shared by the row kernels (RMSNorm, log-softmax, sum of squares).
// The combination order is a fixed butterfly within a warp, then warp 0 combines the warps'
// results in warp order, so a reduction gives the same bits on every run (no atomics).
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr unsigned kFullMask = 0xffffffffu;

template <class F>
__device__ __forceinline__ F warp_sum(F v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Sum over a 1-D block whose size is a multiple of 32 (at most 1024). `scratch` is shared memory
// of 32 elements; every thread gets the result. Ends with a barrier, so scratch may be reused.
template <class F>
__device__ F block_sum(F v, F* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  F total = lane < warps ? scratch[lane] : F(0);
  total = warp_sum(total);
  __syncthreads();
  return total;
}

// Online-softmax state: the running maximum m and the sum s of exp(x - m) over the values seen.
// m = -inf with s = 0 is the empty state; merging keeps exp() away from (-inf) - (-inf).
struct MaxSum {
  float m;
  float s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == neg_inf()) return {m, 0.0f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum other{__shfl_xor_sync(kFullMask, v.m, o), __shfl_xor_sync(kFullMask, v.s, o)};
    v = merge(v, other);
  }
  return v;
}

// Block-wide merge of MaxSum states (block size a multiple of 32). `scratch` is shared memory of
// 32 MaxSum; every thread gets the result.
__device__ inline MaxSum block_merge(MaxSum v, MaxSum* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_merge(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  MaxSum total = lane < warps ? scratch[lane] : MaxSum{neg_inf(), 0.0f};
  total = warp_merge(total);
  __syncthreads();
  return total;
}

}  // namespace leap::cuda::kernels
