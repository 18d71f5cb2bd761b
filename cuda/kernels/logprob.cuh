// The LM head's tail of the CPU backend, fused: log-softmax over the vocabulary and the gather
// of the target's log-probability, without materialising the softmax. Each kernel reads the
// logits as z = s * logits, s = inv_temp (1 / the sampling temperature; s = 1 is exactly the
// unscaled arithmetic), as the CPU backend does.
//   forward:  lse[n] = logsumexp(z[n, :]); logprobs[n] = z[n, t] - lse[n] for rows
//             with t = targets[n] >= 0, else 0. One pass over V with an online (max, sum) per
//             thread, merged across the block in a fixed order. lse and logprobs are fp32.
//   backward: dlogits[n, v] += s * g * (1[v == t] - exp(z[n, v] - lse[n])), g = dlogprobs[n],
//             for rows with t >= 0 and g != 0 (ACCUMULATES; other rows are left untouched).
// The cross-entropy/GRPO loss is a function of the N log-probabilities only, so it needs no
// pass over V.
//
// Vocabulary chunks. So that the (N, V) logits never exist at once, the host may compute them
// Vc columns at a time (logits_chunk = hidden @ W[v0 : v0 + Vc]^T, leading dimension ld) and
// run logprob_chunk_forward per chunk in ascending v0: it folds the chunk into a running per-row
// (max, sum) state, picks up the target's logit when it falls in the chunk, and the last chunk
// leaves lse and logprobs as logprob_forward would (up to the order of the sums). The backward
// needs only lse, so logprob_chunk_backward is independent per chunk (recompute the chunk's
// logits, get its dlogits, then the chunk's two GEMMs). logprob_forward/backward are the
// one-chunk case.
//
// Launch:
//   logprob_forward, logprob_chunk_forward: grid N, block kLogprobThreads, no dynamic smem.
//   logprob_chunk_forward also needs run_sum, N floats of scratch owned by the caller.
//   logprob_backward, logprob_chunk_backward: grid (N, cdiv(Vc, kLogprobBackwardChunk)),
//     block kLogprobThreads, no smem (Vc = V for the whole row).
// Limits: N <= 2^31 - 1; cdiv(Vc, kLogprobBackwardChunk) <= 65535 (Vc < 134M).
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kLogprobThreads = 256;
constexpr int kLogprobBackwardChunk = 2048;

// The block's (max, sum of exp) over s * z[0 .. Vc); every thread gets it.
template <class T>
__device__ __forceinline__ MaxSum row_max_sum(const T* z, int Vc, float s, MaxSum* scratch) {
  MaxSum st{neg_inf(), 0.0f};
  for (int v = threadIdx.x; v < Vc; v += blockDim.x) {
    const float x = __fmul_rn(s, to_float(z[v]));
    if (x > st.m) {
      st.s = st.s * expf(st.m - x) + 1.0f;
      st.m = x;
    } else {
      st.s += expf(x - st.m);
    }
  }
  return block_merge(st, scratch);
}

template <class T>
__global__ void logprob_forward(float* logprobs, float* lse, const T* logits, const int* targets,
                                int N, int V, float s) {
  __shared__ MaxSum scratch[32];
  const int n = blockIdx.x;
  if (n >= N) return;
  const T* z = logits + static_cast<u64>(n) * V;
  const MaxSum st = row_max_sum(z, V, s, scratch);
  if (threadIdx.x == 0) {
    const float l = st.m + logf(st.s);
    const int t = targets[n];
    lse[n] = l;
    logprobs[n] = t >= 0 ? __fmul_rn(s, to_float(z[t])) - l : 0.0f;
  }
}

// Folds columns [v0, v0 + Vc) of each row into its running state: lse[n] holds the running
// max and run_sum[n] the running sum until the last chunk (v0 + Vc == V) turns them into the
// logsumexp; logprobs[n] holds the target's scaled logit once its chunk has passed, and its
// log-probability after the last chunk. Chunks run in ascending v0, starting at 0.
template <class T>
__global__ void logprob_chunk_forward(float* logprobs, float* lse, float* run_sum, const T* logits,
                                      const int* targets, int N, int Vc, int ld, int v0, int V,
                                      float s) {
  __shared__ MaxSum scratch[32];
  const int n = blockIdx.x;
  if (n >= N) return;
  const T* z = logits + static_cast<u64>(n) * ld;
  MaxSum st = row_max_sum(z, Vc, s, scratch);
  if (threadIdx.x != 0) return;
  if (v0 > 0) st = merge(MaxSum{lse[n], run_sum[n]}, st);
  const int t = targets[n];
  if (t >= v0 && t < v0 + Vc) logprobs[n] = __fmul_rn(s, to_float(z[t - v0]));
  if (v0 + Vc < V) {
    lse[n] = st.m;
    run_sum[n] = st.s;
    return;
  }
  const float l = st.m + logf(st.s);
  lse[n] = l;
  logprobs[n] = t >= 0 ? logprobs[n] - l : 0.0f;
}

// g here is s * dlogprobs[n].
template <class T>
__device__ __forceinline__ void softmax_grad_chunk(T* dz, const T* z, float l, float g, float s,
                                                   int t, int Vc, int v0) {
  const int c0 = blockIdx.y * kLogprobBackwardChunk;
  const int c1 = Vc - c0 < kLogprobBackwardChunk ? Vc : c0 + kLogprobBackwardChunk;
  for (int c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    // The CPU backend's order: subtract the softmax term, then add g at the target.
    float d = to_float(dz[c]) - g * expf(__fmul_rn(s, to_float(z[c])) - l);
    if (c + v0 == t) d += g;
    dz[c] = from_float<T>(d);
  }
}

// dlogits and logits hold columns [v0, v0 + Vc) of each row, with leading dimension ld.
template <class T>
__global__ void logprob_chunk_backward(T* dlogits, const float* dlogprobs, const T* logits,
                                       const float* lse, const int* targets, int N, int Vc, int ld,
                                       int v0, float s) {
  const int n = blockIdx.x;
  if (n >= N) return;
  const int t = targets[n];
  const float g = dlogprobs[n];
  if (t < 0 || g == 0.0f) return;
  const u64 row = static_cast<u64>(n) * ld;
  softmax_grad_chunk(dlogits + row, logits + row, lse[n], __fmul_rn(s, g), s, t, Vc, v0);
}

template <class T>
__global__ void logprob_backward(T* dlogits, const float* dlogprobs, const T* logits,
                                 const float* lse, const int* targets, int N, int V, float s) {
  const int n = blockIdx.x;
  if (n >= N) return;
  const int t = targets[n];
  const float g = dlogprobs[n];
  if (t < 0 || g == 0.0f) return;
  const u64 row = static_cast<u64>(n) * V;
  softmax_grad_chunk(dlogits + row, logits + row, lse[n], __fmul_rn(s, g), s, t, V, 0);
}

}  // namespace leap::cuda::kernels
