// Causal grouped-query attention over full sequences (training and the policy's forward), tiled
// with an online softmax in the manner of FlashAttention-2: no T x T matrix is ever stored.
// q, out (B, T, H, D); k, v (B, T, Hkv, D); query head h reads KV head h / (H / Hkv); scores
// are scaled by 1/sqrt(D). Instead of the CPU backend's probabilities `att`, the forward saves
// the per-row logsumexp lse (B, H, T) in fp32, and the backward recomputes the probabilities.
// Storage type S (float or bf16); every dot product, the softmax and the accumulators are fp32.
// Exponentials are exp2f of scores pre-multiplied by log2(e).
//
// Kernels (all blocks of kAttnThreads = 128 threads; tiles of kAttnBr queries x kAttnBc keys,
// staged in shared memory as fp32 with rows padded by one word against bank conflicts):
//   attention_forward<S, D>:        grid (cdiv(T, kAttnBr), H, B),
//                                   dynamic smem attention_forward_smem_bytes(D).
//   attention_backward_delta<S>:    delta (B, H, T) = rowsum(dout * out), the softmax
//                                   backward's correction term; grid elementwise_blocks(B*T*H),
//                                   block kElementwiseThreads, no smem.
//   attention_backward_dkdv<S, D>:  dk, dv += ...; one block per (key tile, KV head, batch)
//                                   loops over the query heads of its group and the query tiles
//                                   at or after its keys, so dk/dv need no atomics;
//                                   grid (cdiv(T, kAttnBc), Hkv, B),
//                                   dynamic smem attention_dkdv_smem_bytes(D).
//   attention_backward_dq<S, D>:    dq += ...; one block per (query tile, head, batch);
//                                   grid (cdiv(T, kAttnBr), H, B),
//                                   dynamic smem attention_dq_smem_bytes(D).
// The backward is the three launches delta -> dkdv -> dq (dkdv and dq are independent). Each
// ACCUMULATES into dq, dk, dv. Recomputing P in both dkdv and dq costs one more pass over the
// scores than FlashAttention-2's atomic dQ, and buys deterministic gradients.
// Shared memory above 48 KB (D = 128: forward 53,760 B, dkdv 74,752 B, dq 70,272 B) needs
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first.
// Limits: D a compile-time multiple of 4, 4 <= D <= 128; H % Hkv == 0; B, H <= 65535.
// These kernels use fp32 FMAs, no tensor-core instructions, so the PTX interpreter runs them.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kAttnThreads = 128;
constexpr int kAttnBr = 32;  // query rows per tile
constexpr int kAttnBc = 32;  // keys per tile
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__host__ __device__ constexpr unsigned attention_forward_smem_bytes(int D) {
  return static_cast<unsigned>(
      (kAttnBr * (D + 1) + 2 * kAttnBc * (D + 1) + kAttnBr * (kAttnBc + 1)) * sizeof(float));
}
__host__ __device__ constexpr unsigned attention_dkdv_smem_bytes(int D) {
  return static_cast<unsigned>(
      (2 * kAttnBc * (D + 1) + 2 * kAttnBr * (D + 1) + 2 * kAttnBc * (kAttnBr + 1) + 2 * kAttnBr) *
      sizeof(float));
}
__host__ __device__ constexpr unsigned attention_dq_smem_bytes(int D) {
  return static_cast<unsigned>(
      (2 * kAttnBr * (D + 1) + 2 * kAttnBc * (D + 1) + kAttnBr * (kAttnBc + 1)) * sizeof(float));
}

// Copies `rows` rows of D elements (row r at src + r * stride) into a padded fp32 tile
// (row pitch D + 1), multiplied by `mul`; rows at or past `valid` are zero.
template <class S, int D>
__device__ __forceinline__ void load_tile(float* tile, const S* src, u64 stride, int rows,
                                          int valid, float mul) {
  for (int idx = threadIdx.x; idx < rows * D; idx += blockDim.x) {
    const int r = idx / D, d = idx % D;
    tile[r * (D + 1) + d] = r < valid ? to_float(src[r * stride + d]) * mul : 0.0f;
  }
}

template <int D>
__device__ __forceinline__ float dot_rows(const float* a, const float* b) {
  float s = 0.0f;
#pragma unroll
  for (int d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}

template <class S, int D>
__global__ void __launch_bounds__(kAttnThreads)
    attention_forward(S* out, float* lse, const S* q, const S* k, const S* v, int B, int T, int H,
                      int Hkv) {
  static_assert(D % 4 == 0 && D >= 4 && D <= 128, "head dim: a multiple of 4 in [4, 128]");
  constexpr int P = D + 1, kPer = D / 4, kCols = kAttnBc / 4;
  extern __shared__ float smem[];
  float* Qs = smem;              // (Br, D + 1), pre-scaled by log2(e) / sqrt(D)
  float* Ks = Qs + kAttnBr * P;  // (Bc, D + 1)
  float* Vs = Ks + kAttnBc * P;  // (Bc, D + 1)
  float* Ps = Vs + kAttnBc * P;  // (Br, Bc + 1)
  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kAttnBr;
  const int kvh = h / (H / Hkv);
  const int r = threadIdx.x >> 2, sub = threadIdx.x & 3, i = i0 + r;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const S* qb = q + static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
  const S* kb = k + static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const S* vb = v + static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const float qscale = kLog2e * rsqrtf(static_cast<float>(D));
  load_tile<S, D>(Qs, qb + static_cast<u64>(i0) * qstride, qstride, kAttnBr, T - i0, qscale);

  float m = neg_inf(), l = 0.0f, o[kPer];
#pragma unroll
  for (int x = 0; x < kPer; ++x) o[x] = 0.0f;
  const int j_end = T < i0 + kAttnBr ? T : i0 + kAttnBr;  // causal: keys < i0 + Br suffice
  for (int j0 = 0; j0 < j_end; j0 += kAttnBc) {
    __syncthreads();  // the previous tile's K/V are no longer read
    load_tile<S, D>(Ks, kb + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0, 1.0f);
    load_tile<S, D>(Vs, vb + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0, 1.0f);
    __syncthreads();
    // This thread's scores: row r, columns sub + 4 c.
    float s[kCols], mx = neg_inf();
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = sub + 4 * c, j = j0 + col;
      s[c] = (j <= i && j < T) ? dot_rows<D>(Qs + r * P, Ks + col * P) : neg_inf();
      mx = fmaxf(mx, s[c]);
    }
    // The four lanes of a row are adjacent in the warp: two butterfly steps give the row max.
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx);
    // A row with no valid key so far (rows past T) keeps m = -inf and contributes nothing.
    const float alpha = m_new == neg_inf() ? 1.0f : exp2f(m - m_new);
    float rowsum = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const float p = m_new == neg_inf() ? 0.0f : exp2f(s[c] - m_new);
      Ps[r * (kAttnBc + 1) + sub + 4 * c] = p;
      rowsum += p;
    }
    rowsum += __shfl_xor_sync(0xffffffffu, rowsum, 1);
    rowsum += __shfl_xor_sync(0xffffffffu, rowsum, 2);
    l = l * alpha + rowsum;
    m = m_new;
    __syncwarp();  // row r of Ps is written and read by the same four lanes
#pragma unroll
    for (int x = 0; x < kPer; ++x) o[x] *= alpha;
    for (int c = 0; c < kAttnBc; ++c) {  // each probability is read once, o stays in registers
      const float p = Ps[r * (kAttnBc + 1) + c];
#pragma unroll
      for (int x = 0; x < kPer; ++x) o[x] += p * Vs[c * P + sub + 4 * x];
    }
  }
  if (i < T) {
    S* ob = out + (static_cast<u64>(b) * T + i) * qstride + static_cast<u64>(h) * D;
    const float inv = 1.0f / l;
#pragma unroll
    for (int x = 0; x < kPer; ++x) ob[sub + 4 * x] = from_float<S>(o[x] * inv);
    if (sub == 0) lse[(static_cast<u64>(b) * H + h) * T + i] = (m + log2f(l)) * kLn2;
  }
}

template <class S>
__global__ void attention_backward_delta(float* delta, const S* dout, const S* out, int B, int T,
                                         int H, int D) {
  const u64 rows = static_cast<u64>(B) * T * H;
  for (u64 row = grid_first(); row < rows; row += grid_stride()) {  // row = (b * T + i) * H + h
    const S* a = dout + row * D;
    const S* o = out + row * D;
    float s = 0.0f;
    for (int d = 0; d < D; ++d) s += to_float(a[d]) * to_float(o[d]);
    const u64 h = row % H, bi = row / H, i = bi % T, b = bi / T;
    delta[(b * H + h) * T + i] = s;
  }
}

template <class S, int D>
__global__ void __launch_bounds__(kAttnThreads)
    attention_backward_dkdv(S* dk, S* dv, const S* dout, const float* lse, const float* delta,
                            const S* q, const S* k, const S* v, int B, int T, int H, int Hkv) {
  static_assert(D % 4 == 0 && D >= 4 && D <= 128, "head dim: a multiple of 4 in [4, 128]");
  constexpr int P = D + 1, PP = kAttnBr + 1, kPer = D / 4, kRows = kAttnBr / 4;
  extern __shared__ float smem[];
  float* Ks = smem;                  // (Bc, D + 1)
  float* Vs = Ks + kAttnBc * P;      // (Bc, D + 1)
  float* Qs = Vs + kAttnBc * P;      // (Br, D + 1)
  float* dOs = Qs + kAttnBr * P;     // (Br, D + 1)
  float* Ps = dOs + kAttnBr * P;     // (Bc, Br + 1): P transposed
  float* dSs = Ps + kAttnBc * PP;    // (Bc, Br + 1): dS transposed (without the 1/sqrt(D))
  float* lse2 = dSs + kAttnBc * PP;  // (Br) lse in log2 units
  float* dlt = lse2 + kAttnBr;       // (Br) delta
  const int b = blockIdx.z, kvh = blockIdx.y, j0 = blockIdx.x * kAttnBc;
  const int group = H / Hkv;
  const int c = threadIdx.x >> 2, sub = threadIdx.x & 3, j = j0 + c;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const u64 kv_off = static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const float scale = rsqrtf(static_cast<float>(D)), scale2 = scale * kLog2e;
  load_tile<S, D>(Ks, k + kv_off + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0, 1.0f);
  load_tile<S, D>(Vs, v + kv_off + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0, 1.0f);

  float dk_acc[kPer], dv_acc[kPer];
#pragma unroll
  for (int x = 0; x < kPer; ++x) dk_acc[x] = dv_acc[x] = 0.0f;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const u64 q_off = static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
    const u64 row_off = (static_cast<u64>(b) * H + h) * T;
    for (int i0 = (j0 / kAttnBr) * kAttnBr; i0 < T; i0 += kAttnBr) {
      __syncthreads();  // the previous query tile is no longer read
      load_tile<S, D>(Qs, q + q_off + static_cast<u64>(i0) * qstride, qstride, kAttnBr, T - i0,
                      1.0f);
      load_tile<S, D>(dOs, dout + q_off + static_cast<u64>(i0) * qstride, qstride, kAttnBr, T - i0,
                      1.0f);
      for (int rr = threadIdx.x; rr < kAttnBr; rr += blockDim.x) {
        const bool ok = i0 + rr < T;
        lse2[rr] = ok ? lse[row_off + i0 + rr] * kLog2e : 0.0f;
        dlt[rr] = ok ? delta[row_off + i0 + rr] : 0.0f;
      }
      __syncthreads();
      // Key c against query rows sub + 4 x: P, then dS = P (dP - delta) with dP = dO . V.
#pragma unroll
      for (int x = 0; x < kRows; ++x) {
        const int rr = sub + 4 * x, i = i0 + rr;
        float p = 0.0f, ds = 0.0f;
        if (i < T && j <= i) {
          p = exp2f(dot_rows<D>(Qs + rr * P, Ks + c * P) * scale2 - lse2[rr]);
          ds = p * (dot_rows<D>(dOs + rr * P, Vs + c * P) - dlt[rr]);
        }
        Ps[c * PP + rr] = p;
        dSs[c * PP + rr] = ds;
      }
      __syncwarp();  // row c of Ps/dSs is written and read by the same four lanes
      for (int rr = 0; rr < kAttnBr; ++rr) {
        const float p = Ps[c * PP + rr], ds = dSs[c * PP + rr];
#pragma unroll
        for (int x = 0; x < kPer; ++x) {
          dv_acc[x] += p * dOs[rr * P + sub + 4 * x];
          dk_acc[x] += ds * Qs[rr * P + sub + 4 * x];
        }
      }
    }
  }
  if (j < T) {
    const u64 at = kv_off + static_cast<u64>(j) * kstride;
#pragma unroll
    for (int x = 0; x < kPer; ++x) {
      const int d = sub + 4 * x;
      dk[at + d] = from_float<S>(to_float(dk[at + d]) + dk_acc[x] * scale);
      dv[at + d] = from_float<S>(to_float(dv[at + d]) + dv_acc[x]);
    }
  }
}

template <class S, int D>
__global__ void __launch_bounds__(kAttnThreads)
    attention_backward_dq(S* dq, const S* dout, const float* lse, const float* delta, const S* q,
                          const S* k, const S* v, int B, int T, int H, int Hkv) {
  static_assert(D % 4 == 0 && D >= 4 && D <= 128, "head dim: a multiple of 4 in [4, 128]");
  constexpr int P = D + 1, PS = kAttnBc + 1, kPer = D / 4, kCols = kAttnBc / 4;
  extern __shared__ float smem[];
  float* Qs = smem;               // (Br, D + 1)
  float* dOs = Qs + kAttnBr * P;  // (Br, D + 1)
  float* Ks = dOs + kAttnBr * P;  // (Bc, D + 1)
  float* Vs = Ks + kAttnBc * P;   // (Bc, D + 1)
  float* dSs = Vs + kAttnBc * P;  // (Br, Bc + 1)
  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kAttnBr;
  const int kvh = h / (H / Hkv);
  const int r = threadIdx.x >> 2, sub = threadIdx.x & 3, i = i0 + r;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const u64 q_off = static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
  const u64 kv_off = static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const float scale = rsqrtf(static_cast<float>(D)), scale2 = scale * kLog2e;
  load_tile<S, D>(Qs, q + q_off + static_cast<u64>(i0) * qstride, qstride, kAttnBr, T - i0, 1.0f);
  load_tile<S, D>(dOs, dout + q_off + static_cast<u64>(i0) * qstride, qstride, kAttnBr, T - i0,
                  1.0f);
  const u64 row = (static_cast<u64>(b) * H + h) * T + i;
  const float my_lse2 = i < T ? lse[row] * kLog2e : 0.0f;
  const float my_delta = i < T ? delta[row] : 0.0f;

  float dq_acc[kPer];
#pragma unroll
  for (int x = 0; x < kPer; ++x) dq_acc[x] = 0.0f;
  const int j_end = T < i0 + kAttnBr ? T : i0 + kAttnBr;
  for (int j0 = 0; j0 < j_end; j0 += kAttnBc) {
    __syncthreads();
    load_tile<S, D>(Ks, k + kv_off + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0,
                    1.0f);
    load_tile<S, D>(Vs, v + kv_off + static_cast<u64>(j0) * kstride, kstride, kAttnBc, T - j0,
                    1.0f);
    __syncthreads();
#pragma unroll
    for (int cc = 0; cc < kCols; ++cc) {
      const int col = sub + 4 * cc, j = j0 + col;
      float ds = 0.0f;
      if (i < T && j <= i) {
        const float p = exp2f(dot_rows<D>(Qs + r * P, Ks + col * P) * scale2 - my_lse2);
        ds = p * (dot_rows<D>(dOs + r * P, Vs + col * P) - my_delta);
      }
      dSs[r * PS + col] = ds;
    }
    __syncwarp();  // row r of dSs is written and read by the same four lanes
    for (int cc = 0; cc < kAttnBc; ++cc) {
      const float ds = dSs[r * PS + cc];
#pragma unroll
      for (int x = 0; x < kPer; ++x) dq_acc[x] += ds * Ks[cc * P + sub + 4 * x];
    }
  }
  if (i < T) {
    S* g = dq + q_off + static_cast<u64>(i) * qstride;
#pragma unroll
    for (int x = 0; x < kPer; ++x) {
      const int d = sub + 4 * x;
      g[d] = from_float<S>(to_float(g[d]) + dq_acc[x] * scale);
    }
  }
}

}  // namespace leap::cuda::kernels
