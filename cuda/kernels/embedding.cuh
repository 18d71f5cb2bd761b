// Token embedding of the CUDA backend: out (N, C) = wte[tokens[n]] (T storage; the table T or
// bf16), and its backward into the fp32 table gradient dwte (V, C), ACCUMULATED.
//
// The backward is deterministic without atomics: rows that share a token are summed by one
// thread per channel, in row order. The host groups the rows by token first (it has the tokens
// in host memory anyway), as a CSR list:
//   uniq[u]                        the u-th distinct token, u < U (any order);
//   rows[offsets[u] .. offsets[u+1])  the rows n with tokens[n] == uniq[u], ascending;
//   offsets (U + 1), offsets[0] = 0, offsets[U] = N.
//
// Launch:
//   embedding_forward:  grid elementwise_blocks(N * C), block kElementwiseThreads, no smem.
//   embedding_backward: grid (U, cdiv(C, kEmbeddingBackwardThreads)), block
//                       kEmbeddingBackwardThreads, no smem. U <= 2^31 - 1.
// Limits: tokens in [0, V) (checked by the caller).
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kEmbeddingBackwardThreads = 256;

// The table may be stored in another type W than the output (a model whose matrices are kept
// in bf16 only: optim.master_weights = optimizer); the row is converted exactly when W is
// narrower than T.
template <class T, class W = T>
__global__ void embedding_forward(T* out, const int* tokens, const W* wte, int N, int C) {
  const u64 n_elems = static_cast<u64>(N) * C;
  for (u64 i = grid_first(); i < n_elems; i += grid_stride()) {
    const u64 n = i / C, c = i % C;
    out[i] = from_float<T>(to_float(wte[static_cast<u64>(tokens[n]) * C + c]));
  }
}

template <class T>
__global__ void embedding_backward(float* dwte, const T* dout, const int* uniq, const int* offsets,
                                   const int* rows, int C) {
  const int u = blockIdx.x;
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = 0.0f;
  for (int r = offsets[u]; r < offsets[u + 1]; ++r)
    acc += to_float(dout[static_cast<u64>(rows[r]) * C + c]);
  dwte[static_cast<u64>(uniq[u]) * C + c] += acc;
}

}  // namespace leap::cuda::kernels
