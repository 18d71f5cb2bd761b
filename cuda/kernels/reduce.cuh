// Sum of squares of a gradient buffer, for global-norm clipping (the CPU backend's sum_squares),
// accumulated in double. Two launches, no atomics, so the result depends only on n:
//   1. sum_squares_partial: block b writes partial[b], the sum over its grid-stride share;
//   2. sum_squares_finish:  one block sums partial[0 .. blocks) in a fixed order into *out.
//
// Launch:
//   sum_squares_partial: grid sum_squares_blocks(n), block kSumSquaresThreads, no dynamic smem;
//     partial holds sum_squares_blocks(n) doubles (scratch owned by the caller).
//   sum_squares_finish:  grid 1, block kSumSquaresThreads, no dynamic smem.
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kSumSquaresThreads = 256;
constexpr unsigned kSumSquaresMaxBlocks = 1024;
__host__ __device__ constexpr unsigned sum_squares_blocks(u64 n) {
  return n == 0 ? 1u
                : (cdiv(n, kSumSquaresThreads * 4) < kSumSquaresMaxBlocks
                       ? static_cast<unsigned>(cdiv(n, kSumSquaresThreads * 4))
                       : kSumSquaresMaxBlocks);
}

// F: the gradient's type (float, or bf16 for a compute-type buffer).
template <class F>
__global__ void sum_squares_partial(double* partial, const F* x, u64 n) {
  __shared__ double scratch[32];
  double acc = 0.0;
  for (u64 i = grid_first(); i < n; i += grid_stride()) {
    const double v = to_float(x[i]);
    acc += v * v;
  }
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// Acc: double here; a template so that the header defines no non-inline function.
template <class Acc>
__global__ void sum_squares_finish(Acc* out, const Acc* partial, int blocks) {
  __shared__ Acc scratch[32];
  Acc acc = 0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partial[i];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) *out = acc;
}

}  // namespace leap::cuda::kernels
