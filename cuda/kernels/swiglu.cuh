// SwiGLU of the CPU backend: out (N, I) = silu(gate) * up, where inp (N, 2I) holds [gate | up]
// per row; the backward ACCUMULATES into dinp (N, 2I). fp32 arithmetic, T storage.
//
// Launch (both kernels): grid elementwise_blocks(N * I), block kElementwiseThreads, no shared
// memory. One thread per (row, column): no reduction, deterministic.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

template <class T>
__global__ void swiglu_forward(T* out, const T* inp, int N, int I) {
  const u64 n_elems = static_cast<u64>(N) * I;
  for (u64 i = grid_first(); i < n_elems; i += grid_stride()) {
    const u64 row = i / I, col = i % I;
    const float g = to_float(inp[row * 2 * I + col]), u = to_float(inp[row * 2 * I + I + col]);
    out[i] = from_float<T>(g * sigmoid(g) * u);
  }
}

// dgate += dout * up * silu'(gate), with silu'(g) = s (1 + g (1 - s)), s = sigmoid(g);
// dup += dout * silu(gate).
template <class T>
__global__ void swiglu_backward(T* dinp, const T* dout, const T* inp, int N, int I) {
  const u64 n_elems = static_cast<u64>(N) * I;
  for (u64 i = grid_first(); i < n_elems; i += grid_stride()) {
    const u64 row = i / I, col = i % I;
    const u64 gi = row * 2 * I + col, ui = gi + I;
    const float g = to_float(inp[gi]), u = to_float(inp[ui]), dy = to_float(dout[i]);
    const float s = sigmoid(g);
    dinp[gi] = from_float<T>(to_float(dinp[gi]) + dy * u * s * (1.0f + g * (1.0f - s)));
    dinp[ui] = from_float<T>(to_float(dinp[ui]) + dy * g * s);
  }
}

}  // namespace leap::cuda::kernels
