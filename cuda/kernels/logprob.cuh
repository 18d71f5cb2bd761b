// The LM head's tail of the CPU backend, fused: log-softmax over the vocabulary and the gather
// of the target's log-probability, without materialising the softmax.
//   forward:  lse[n] = logsumexp(logits[n, :]); logprobs[n] = logits[n, t] - lse[n] for rows
//             with t = targets[n] >= 0, else 0. One pass over V with an online (max, sum) per
//             thread, merged across the block in a fixed order. lse and logprobs are fp32.
//   backward: dlogits[n, v] += g * (1[v == t] - exp(logits[n, v] - lse[n])), g = dlogprobs[n],
//             for rows with t >= 0 and g != 0 (ACCUMULATES; other rows are left untouched).
// The cross-entropy/GRPO loss is a function of the N log-probabilities only, so it needs no
// pass over V. To bound memory at large vocabularies the host computes the logits for a block
// of rows at a time and calls both kernels per block (the kernels take any N).
//
// Launch:
//   logprob_forward:  grid N, block kLogprobThreads, no dynamic smem.
//   logprob_backward: grid (N, cdiv(V, kLogprobBackwardChunk)), block kLogprobThreads, no smem.
// Limits: N <= 2^31 - 1; cdiv(V, kLogprobBackwardChunk) <= 65535 (V < 134M).
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kLogprobThreads = 256;
constexpr int kLogprobBackwardChunk = 2048;

template <class T>
__global__ void logprob_forward(float* logprobs, float* lse, const T* logits, const int* targets,
                                int N, int V) {
  __shared__ MaxSum scratch[32];
  const int n = blockIdx.x;
  if (n >= N) return;
  const T* z = logits + static_cast<u64>(n) * V;
  MaxSum st{neg_inf(), 0.0f};
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = to_float(z[v]);
    if (x > st.m) {
      st.s = st.s * expf(st.m - x) + 1.0f;
      st.m = x;
    } else {
      st.s += expf(x - st.m);
    }
  }
  st = block_merge(st, scratch);
  if (threadIdx.x == 0) {
    const float l = st.m + logf(st.s);
    const int t = targets[n];
    lse[n] = l;
    logprobs[n] = t >= 0 ? to_float(z[t]) - l : 0.0f;
  }
}

template <class T>
__global__ void logprob_backward(T* dlogits, const float* dlogprobs, const T* logits,
                                 const float* lse, const int* targets, int N, int V) {
  const int n = blockIdx.x;
  if (n >= N) return;
  const int t = targets[n];
  const float g = dlogprobs[n];
  if (t < 0 || g == 0.0f) return;
  const float l = lse[n];
  const u64 row = static_cast<u64>(n) * V;
  const int v0 = blockIdx.y * kLogprobBackwardChunk;
  const int v1 = V - v0 < kLogprobBackwardChunk ? V : v0 + kLogprobBackwardChunk;
  for (int v = v0 + threadIdx.x; v < v1; v += blockDim.x) {
    // The CPU backend's order: subtract the softmax term, then add g at the target.
    float d = to_float(dlogits[row + v]) - g * expf(to_float(logits[row + v]) - l);
    if (v == t) d += g;
    dlogits[row + v] = from_float<T>(d);
  }
}

}  // namespace leap::cuda::kernels
