// Inference-time attention against the KV cache (the sampler's prefill and decode steps).
//
// Two storage types: T for the activations (q, k, v, out) and C for the cache, which may be
// narrower (the sampler's bf16 cache beside fp32 activations: sampler.kv_cache_dtype).
//
// kv_cache_write: row r of k, v (rows, Hkv, D) goes to cache slot slot[r], position pos[r]; the
//   caches are (slots, maxT, Hkv, D), written as C (rounded to nearest even when narrower). A paged cache passes block and offset as slot and pos, and
//   the block size as maxT. Prefill writes a whole prompt, decode one token per sequence.
//   Launch: grid elementwise_blocks(rows * Hkv * D), block kElementwiseThreads, no smem.
//
// attention_decode: the CPU backend's attention_decode over a paged cache (blocks, block_size,
//   Hkv, D). q (n, H, D); row r attends to its first len[r] positions (its own token included),
//   position j in block block_table[r * max_blocks + j / block_size] at offset j % block_size
//   (a contiguous cache: block_size = maxT, max_blocks = 1, the table = the slots); query head h reading KV
//   head h / (H / Hkv), scores scaled by 1/sqrt(D); out (n, H, D). One block per (row, head):
//   each warp walks every kDecodeWarps-th key with an online softmax (lanes split D, the dot
//   product is a warp reduction), then the warps' states are merged in warp order
//   (deterministic). fp32 arithmetic; T for q and out, C for the cache.
//   Launch: grid n * H, block kDecodeThreads, no dynamic smem (static ~2.1 KB).
// Limits: D <= kDecodeMaxD (128); 1 <= len[r] <= max_blocks * block_size; the table's blocks
//   exist (checked by the caller).
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kDecodeWarps = 4;
constexpr int kDecodeThreads = 32 * kDecodeWarps;
constexpr int kDecodeMaxD = 128;

template <class T, class C = T>
__global__ void kv_cache_write(C* k_cache, C* v_cache, const T* k, const T* v, const int* slot,
                               const int* pos, int rows, int maxT, int Hkv, int D) {
  const u64 KD = static_cast<u64>(Hkv) * D, n_elems = static_cast<u64>(rows) * KD;
  for (u64 i = grid_first(); i < n_elems; i += grid_stride()) {
    const u64 r = i / KD, c = i % KD;
    const u64 dst = (static_cast<u64>(slot[r]) * maxT + pos[r]) * KD + c;
    k_cache[dst] = from_float<C>(to_float(k[i]));
    v_cache[dst] = from_float<C>(to_float(v[i]));
  }
}

template <class T, class C = T>
__global__ void __launch_bounds__(kDecodeThreads)
    attention_decode(T* out, const T* q, const C* k_cache, const C* v_cache,
                     const int* block_table, int max_blocks, const int* len, int n,
                     int block_size, int H, int Hkv, int D) {
  constexpr int kPerLane = kDecodeMaxD / 32;
  __shared__ float s_o[kDecodeWarps][kDecodeMaxD];
  __shared__ float s_m[kDecodeWarps], s_l[kDecodeWarps];
  const int r = blockIdx.x / H, h = blockIdx.x % H;
  if (r >= n) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kvh = h / (H / Hkv), L = len[r];
  const float scale = rsqrtf(static_cast<float>(D));
  const u64 KD = static_cast<u64>(Hkv) * D;
  const T* qr = q + (static_cast<u64>(r) * H + h) * D;
  const int* table = block_table + static_cast<u64>(r) * max_blocks;

  float qv[kPerLane], o[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < D ? to_float(qr[d]) * scale : 0.0f;
    o[i] = 0.0f;
  }
  float m = neg_inf(), l = 0.0f;
  for (int j = warp; j < L; j += kDecodeWarps) {
    const u64 at = (static_cast<u64>(table[j / block_size]) * block_size + j % block_size) * KD +
                   static_cast<u64>(kvh) * D;
    const C* kj = k_cache + at;
    const C* vj = v_cache + at;
    float part = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) part += qv[i] * to_float(kj[d]);
    }
    const float s = warp_sum(part);
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new), p = expf(s - m_new);
    l = l * alpha + p;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      o[i] = o[i] * alpha + (d < D ? p * to_float(vj[d]) : 0.0f);
    }
    m = m_new;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) s_o[warp][lane + 32 * i] = o[i];
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
  __syncthreads();
  // Merge the warps' (m, l, o) in warp order; a warp that saw no key has m = -inf, l = 0.
  float M = neg_inf();
  for (int w = 0; w < kDecodeWarps; ++w) M = fmaxf(M, s_m[w]);
  float Lsum = 0.0f;
  for (int w = 0; w < kDecodeWarps; ++w)
    Lsum += s_m[w] == neg_inf() ? 0.0f : s_l[w] * expf(s_m[w] - M);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w)
      if (s_m[w] != neg_inf()) acc += s_o[w][d] * expf(s_m[w] - M);
    out[(static_cast<u64>(r) * H + h) * D + d] = from_float<T>(acc / Lsum);
  }
}

}  // namespace leap::cuda::kernels
