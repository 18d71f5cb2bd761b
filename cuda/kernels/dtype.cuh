// Storage types of the CUDA backend's kernels and the launch-geometry helpers they share.
// Activations are stored as T (float or __nv_bfloat16) and widened to fp32 for all arithmetic;
// narrowing back to bf16 rounds to nearest-even (__float2bfloat16). Every kernel header in this
// folder compiles with nvcc and with NVRTC (which has cuda_bf16.h built in), so it includes
// nothing from the host's standard library: sizes are `unsigned long long`, indices `int`.
#pragma once

#include <cuda_bf16.h>

namespace leap::cuda::kernels {

using bf16 = __nv_bfloat16;
using u64 = unsigned long long;

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(bf16 x) {
  return __bfloat162float(x);
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return __float2bfloat16(x);
}

// -inf, the identity of max() (math.h's INFINITY is not available under NVRTC).
__device__ __forceinline__ float neg_inf() {
  return __int_as_float(0xff800000);
}

// Ceiling division, for grids: usable in host code and in constant expressions.
__host__ __device__ constexpr u64 cdiv(u64 a, u64 b) {
  return (a + b - 1) / b;
}

// Element-wise kernels: 1-D blocks of kElementwiseThreads, a grid-stride loop, and a grid capped
// at kElementwiseMaxBlocks (enough to fill an H100 several times over), so any n launches.
constexpr int kElementwiseThreads = 256;
constexpr unsigned kElementwiseMaxBlocks = 8192;
__host__ __device__ constexpr unsigned elementwise_blocks(u64 n) {
  return n == 0 ? 1u
                : (cdiv(n, kElementwiseThreads) < kElementwiseMaxBlocks
                       ? static_cast<unsigned>(cdiv(n, kElementwiseThreads))
                       : kElementwiseMaxBlocks);
}

// The first index and stride of a grid-stride loop over a 1-D grid of 1-D blocks.
__device__ __forceinline__ u64 grid_first() {
  return static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ u64 grid_stride() {
  return static_cast<u64>(gridDim.x) * blockDim.x;
}

}  // namespace leap::cuda::kernels
