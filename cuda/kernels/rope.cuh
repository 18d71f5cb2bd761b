// Rotate-half RoPE (HF) of the CPU backend: x (N, H, D) with row n at position pos[n]; cos/sin
// tables (maxT, D/2) in fp32. Element i < D/2 pairs with i + D/2. The rotation is orthogonal, so
// the backward is the rotation by -angle, ACCUMULATED into dinp.
//
// Launch (both kernels): grid elementwise_blocks(N * H * (D/2)), block kElementwiseThreads, no
// shared memory. One thread per pair, which it reads before writing: out may alias inp.
// Limits: D even; pos[n] < maxT (checked by the caller).
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

// sign = +1: out = rotate(inp); sign = -1 with kAccumulate: out += rotate^-1(inp).
template <class T, bool kAccumulate>
__device__ __forceinline__ void rope_rotate(T* out, const T* inp, const float* cos_table,
                                            const float* sin_table, const int* pos, int N, int H,
                                            int D, float sign) {
  const int half = D / 2;
  const u64 pairs = static_cast<u64>(N) * H * half;
  for (u64 p = grid_first(); p < pairs; p += grid_stride()) {
    const int i = static_cast<int>(p % half);
    const u64 nh = p / half;  // n * H + h
    const u64 n = nh / H;
    const u64 t = static_cast<u64>(pos[n]) * half + i;
    const float c = cos_table[t], s = sign * sin_table[t];
    const u64 lo_i = nh * D + i, hi_i = lo_i + half;
    const float a = to_float(inp[lo_i]), b = to_float(inp[hi_i]);
    float lo = a * c - b * s, hi = b * c + a * s;
    if (kAccumulate) {
      lo += to_float(out[lo_i]);
      hi += to_float(out[hi_i]);
    }
    out[lo_i] = from_float<T>(lo);
    out[hi_i] = from_float<T>(hi);
  }
}

template <class T>
__global__ void rope_forward(T* out, const T* inp, const float* cos_table, const float* sin_table,
                             const int* pos, int N, int H, int D) {
  rope_rotate<T, false>(out, inp, cos_table, sin_table, pos, N, H, D, 1.0f);
}

template <class T>
__global__ void rope_backward(T* dinp, const T* dout, const float* cos_table,
                              const float* sin_table, const int* pos, int N, int H, int D) {
  rope_rotate<T, true>(dinp, dout, cos_table, sin_table, pos, N, H, D, -1.0f);
}

}  // namespace leap::cuda::kernels
