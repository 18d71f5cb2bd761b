// The training attention kernels' fast path for head dims 64 and 128: the same computation as
// attention.cuh (causal GQA, online softmax, saved logsumexp, the backward as delta -> dk/dv ->
// dq, each accumulating, deterministic), on 64 x 64 tiles with register micro-tiles. On an H200
// attention.cuh's kernels did one shared-memory load per FMA (about 8 TFLOP/s, 69% of a ~124M
// training step); here each thread computes a 4 x 4 block of scores and a 4 x (D / 16) block of
// outputs from float4 loads, 8 FMAs or more per load. Still fp32 FMAs, no tensor-core
// instructions, so the PTX interpreter runs them; attention.cuh's kernels serve the other head
// dims. The layouts, arguments and results are attention.cuh's.
//
// Kernels (all blocks of kWideThreads = 256 threads = 16 x 16, ty = threadIdx.x / 16 and
// tx = threadIdx.x % 16; tiles of kWideTile = 64 queries and 64 keys in shared memory as fp32,
// rows padded by 4 words so that float4 loads stay aligned and conflict-free):
//   attention_forward_wide<S, D>:       grid (cdiv(T, 64), H, B), smem wide_forward_smem_bytes(D).
//   attention_backward_dkdv_wide<S, D>: grid (cdiv(T, 64), Hkv, B), smem wide_dkdv_smem_bytes(D).
//   attention_backward_dq_wide<S, D>:   grid (cdiv(T, 64), H, B), smem wide_dq_smem_bytes(D).
// The delta kernel is attention.cuh's attention_backward_delta.
// A thread owns score rows ty + 16 i and columns tx + 16 j (i, j < 4), and output rows
// ty + 16 i and columns 64 g + 4 tx + e (g < D / 64, e < 4). The 16 lanes of a score row are one
// half of a warp, so row maxima and sums are four xor shuffles.
// Shared memory (all above 48 KB: cudaFuncSetAttribute first): D = 64: forward 69,632 B,
// dk/dv 104,960 B, dq 87,040 B; D = 128: 118,784 B, 170,496 B, 152,576 B.
// Limits: D 64 or 128; H % Hkv == 0; B, H <= 65535.
#pragma once

#include "cuda/kernels/attention.cuh"

namespace leap::cuda::kernels {

constexpr int kWideThreads = 256;
constexpr int kWideTile = 64;
constexpr int kWideScorePitch = kWideTile + 4;

__host__ __device__ constexpr unsigned wide_tile_floats(int D) {
  return static_cast<unsigned>(kWideTile * (D + 4));
}
__host__ __device__ constexpr unsigned wide_forward_smem_bytes(int D) {
  return static_cast<unsigned>((3 * wide_tile_floats(D) + kWideTile * kWideScorePitch) *
                               sizeof(float));
}
__host__ __device__ constexpr unsigned wide_dq_smem_bytes(int D) {
  return static_cast<unsigned>((4 * wide_tile_floats(D) + kWideTile * kWideScorePitch) *
                               sizeof(float));
}
__host__ __device__ constexpr unsigned wide_dkdv_smem_bytes(int D) {
  return static_cast<unsigned>((4 * wide_tile_floats(D) + 2 * kWideTile * kWideScorePitch +
                                2 * kWideTile) *
                               sizeof(float));
}

// A 64-row tile of D elements (row r at src + r * stride) into shared memory (row pitch D + 4),
// multiplied by `mul`; rows at or past `valid` are zero.
template <class S, int D>
__device__ __forceinline__ void wide_load(float* tile, const S* src, u64 stride, int valid,
                                          float mul) {
  constexpr int kQuads = D / 4;
  for (int idx = threadIdx.x; idx < kWideTile * kQuads; idx += blockDim.x) {
    const int r = idx / kQuads, d = (idx % kQuads) * 4;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < valid) {
      const S* p = src + r * stride + d;
      x = make_float4(to_float(p[0]) * mul, to_float(p[1]) * mul, to_float(p[2]) * mul,
                      to_float(p[3]) * mul);
    }
    *reinterpret_cast<float4*>(tile + r * (D + 4) + d) = x;
  }
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
__device__ __forceinline__ float lane(float4 a, int e) {
  return e == 0 ? a.x : e == 1 ? a.y : e == 2 ? a.z : a.w;
}

// acc[i][j] = sum over k < K of A[ty + 16 i][k] * B[tx + 16 j][k]: both operands row-major with
// k contiguous (pitches pa, pb), 8 float4 loads per 64 FMAs.
template <int K>
__device__ __forceinline__ void wide_scores(float (&acc)[4][4], const float* A, int pa,
                                            const float* B, int pb, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  // No unroll pragma on the k loops: with a partial unroll NVCC 13.0 emitted different code run
  // to run for the same source (docs/ptx_coverage.md could not be regenerated the same twice).
  for (int k = 0; k < K; k += 4) {
    float4 a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = *reinterpret_cast<const float4*>(A + (ty + 16 * i) * pa + k);
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = *reinterpret_cast<const float4*>(B + (tx + 16 * j) * pb + k);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] += dot4(a[i], b[j]);
  }
}

// acc[i][4 g + e] += sum over k < 64 of A[ty + 16 i][k] * B[k][64 g + 4 tx + e]: A a score tile
// (pitch kWideScorePitch), B a value-like tile (pitch D + 4).
template <int D>
__device__ __forceinline__ void wide_accumulate(float (&acc)[4][D / 16], const float* A,
                                                const float* B, int ty, int tx) {
  constexpr int G = D / 64;
  for (int k = 0; k < kWideTile; k += 4) {
    float4 a[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      a[i] = *reinterpret_cast<const float4*>(A + (ty + 16 * i) * kWideScorePitch + k);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float4 b =
            *reinterpret_cast<const float4*>(B + (k + kk) * (D + 4) + 64 * g + 4 * tx);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float ai = lane(a[i], kk);
          acc[i][4 * g + 0] += ai * b.x;
          acc[i][4 * g + 1] += ai * b.y;
          acc[i][4 * g + 2] += ai * b.z;
          acc[i][4 * g + 3] += ai * b.w;
        }
      }
    }
  }
}

// The 16 lanes of a score row (one half-warp) reduce together.
__device__ __forceinline__ float half_warp_max(float x) {
#pragma unroll
  for (int o = 1; o < 16; o <<= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float half_warp_sum(float x) {
#pragma unroll
  for (int o = 1; o < 16; o <<= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// The softmax's backward over a thread's 4 x 4 scores: the scores s = A . B and dP = dA . dB
// (wide_scores, over D), then p = exp2(s * scale2 - lse2) and dS = p (dP - delta), both 0
// where `at(i, j, &lse2, &delta)` says the score is masked (a key after its query, or past T);
// `store(i, j, p, ds)` puts them in shared memory.
template <int D, class At, class Store>
__device__ __forceinline__ void wide_softmax_backward(const float* A, const float* B, const float* dA,
                                                      const float* dB, int ty, int tx, float scale2,
                                                      At at, Store store) {
  float s[4][4], dp[4][4];
  wide_scores<D>(s, A, D + 4, B, D + 4, ty, tx);
  wide_scores<D>(dp, dA, D + 4, dB, D + 4, ty, tx);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float lse2 = 0.0f, delta = 0.0f, p = 0.0f, ds = 0.0f;
      if (at(i, j, &lse2, &delta)) {
        p = exp2f(s[i][j] * scale2 - lse2);
        ds = p * (dp[i][j] - delta);
      }
      store(i, j, p, ds);
    }
}

// Writes acc[i][4 g + e] * mul added to the output rows (row0 + ty + 16 i < T) of a
// (T, ..., D) tensor at base with row stride `stride`.
template <class S, int D>
__device__ __forceinline__ void wide_add_rows(S* base, u64 stride, int row0, int T,
                                              const float (&acc)[4][D / 16], float mul, int ty,
                                              int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty + 16 * i;
    if (r >= T) continue;
    S* row = base + static_cast<u64>(r) * stride;
#pragma unroll
    for (int g = 0; g < D / 64; ++g)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int d = 64 * g + 4 * tx + e;
        row[d] = from_float<S>(to_float(row[d]) + acc[i][4 * g + e] * mul);
      }
  }
}

template <class S, int D>
__global__ void __launch_bounds__(kWideThreads)
    attention_forward_wide(S* out, float* lse, const S* q, const S* k, const S* v, int B, int T,
                           int H, int Hkv) {
  static_assert(D == 64 || D == 128, "the wide kernels are for head dims 64 and 128");
  constexpr int P = D + 4, PS = kWideScorePitch;
  extern __shared__ __align__(16) float smem[];  // float4 loads and stores
  float* Qs = smem;                         // (64, D + 4), pre-scaled by log2(e) / sqrt(D)
  float* Ks = Qs + wide_tile_floats(D);     // (64, D + 4)
  float* Vs = Ks + wide_tile_floats(D);     // (64, D + 4)
  float* Ps = Vs + wide_tile_floats(D);     // (64, 68)
  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kWideTile;
  const int kvh = h / (H / Hkv);
  const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const S* qb = q + static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
  const S* kb = k + static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const S* vb = v + static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  wide_load<S, D>(Qs, qb + static_cast<u64>(i0) * qstride, qstride, T - i0,
                  kLog2e * rsqrtf(static_cast<float>(D)));

  float m[4], l[4], o[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = neg_inf();
    l[i] = 0.0f;
#pragma unroll
    for (int x = 0; x < D / 16; ++x) o[i][x] = 0.0f;
  }
  const int j_end = T < i0 + kWideTile ? T : i0 + kWideTile;  // causal
  for (int j0 = 0; j0 < j_end; j0 += kWideTile) {
    __syncthreads();  // the previous tile's K, V and P are no longer read
    wide_load<S, D>(Ks, kb + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);
    wide_load<S, D>(Vs, vb + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);
    __syncthreads();
    float s[4][4];
    wide_scores<D>(s, Qs, P, Ks, P, ty, tx);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = i0 + ty + 16 * i;
      float mx = neg_inf();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = j0 + tx + 16 * j;
        if (col > row || col >= T) s[i][j] = neg_inf();
        mx = fmaxf(mx, s[i][j]);
      }
      const float m_new = fmaxf(m[i], half_warp_max(mx));
      // Every valid row meets its own diagonal key in its first tile, so m is finite from then
      // on; the guard keeps a fully masked tile row (none today) from computing inf - inf.
      const float alpha = m_new == neg_inf() ? 1.0f : exp2f(m[i] - m_new);
      float rowsum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float p = m_new == neg_inf() ? 0.0f : exp2f(s[i][j] - m_new);
        Ps[(ty + 16 * i) * PS + tx + 16 * j] = p;
        rowsum += p;
      }
      l[i] = l[i] * alpha + half_warp_sum(rowsum);
      m[i] = m_new;
#pragma unroll
      for (int x = 0; x < D / 16; ++x) o[i][x] *= alpha;
    }
    __syncwarp();  // a row of Ps is written and read by the same half-warp
    wide_accumulate<D>(o, Ps, Vs, ty, tx);
  }
  S* ob = out + static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = i0 + ty + 16 * i;
    if (row >= T) continue;
    const float inv = 1.0f / l[i];
#pragma unroll
    for (int g = 0; g < D / 64; ++g)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        ob[static_cast<u64>(row) * qstride + 64 * g + 4 * tx + e] =
            from_float<S>(o[i][4 * g + e] * inv);
    if (tx == 0) lse[(static_cast<u64>(b) * H + h) * T + row] = (m[i] + log2f(l[i])) * kLn2;
  }
}

template <class S, int D>
__global__ void __launch_bounds__(kWideThreads)
    attention_backward_dkdv_wide(S* dk, S* dv, const S* dout, const float* lse,
                                 const float* delta, const S* q, const S* k, const S* v, int B,
                                 int T, int H, int Hkv) {
  static_assert(D == 64 || D == 128, "the wide kernels are for head dims 64 and 128");
  constexpr int PS = kWideScorePitch;
  extern __shared__ __align__(16) float smem[];  // float4 loads and stores
  float* Ks = smem;                      // (64 keys, D + 4)
  float* Vs = Ks + wide_tile_floats(D);  // (64 keys, D + 4)
  float* Qs = Vs + wide_tile_floats(D);  // (64 queries, D + 4)
  float* dOs = Qs + wide_tile_floats(D); // (64 queries, D + 4)
  float* PTs = dOs + wide_tile_floats(D);  // (64 keys, 68): P transposed
  float* dSTs = PTs + kWideTile * PS;      // (64 keys, 68): dS transposed, without 1/sqrt(D)
  float* lse2 = dSTs + kWideTile * PS;     // (64) lse in log2 units
  float* dlt = lse2 + kWideTile;           // (64) delta
  const int b = blockIdx.z, kvh = blockIdx.y, j0 = blockIdx.x * kWideTile;
  const int group = H / Hkv;
  const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const u64 kv_off = static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const float scale = rsqrtf(static_cast<float>(D)), scale2 = scale * kLog2e;
  wide_load<S, D>(Ks, k + kv_off + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);
  wide_load<S, D>(Vs, v + kv_off + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);

  float dk_acc[4][D / 16], dv_acc[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int x = 0; x < D / 16; ++x) dk_acc[i][x] = dv_acc[i][x] = 0.0f;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const u64 q_off = static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
    const u64 row_off = (static_cast<u64>(b) * H + h) * T;
    for (int i0 = j0; i0 < T; i0 += kWideTile) {  // query tiles at or after the keys
      __syncthreads();  // the previous query tile, P and dS are no longer read
      wide_load<S, D>(Qs, q + q_off + static_cast<u64>(i0) * qstride, qstride, T - i0, 1.0f);
      wide_load<S, D>(dOs, dout + q_off + static_cast<u64>(i0) * qstride, qstride, T - i0, 1.0f);
      for (int r = threadIdx.x; r < kWideTile; r += blockDim.x) {
        const bool ok = i0 + r < T;
        lse2[r] = ok ? lse[row_off + i0 + r] * kLog2e : 0.0f;
        dlt[r] = ok ? delta[row_off + i0 + r] : 0.0f;
      }
      __syncthreads();
      // Keys ty + 16 i against queries tx + 16 j: P, then dS = P (dP - delta), dP = V . dO.
      wide_softmax_backward<D>(
          Ks, Qs, Vs, dOs, ty, tx, scale2,
          [&](int i, int j, float* l2, float* d) {
            const int qc = tx + 16 * j, query = i0 + qc;
            *l2 = lse2[qc];
            *d = dlt[qc];
            return query < T && j0 + ty + 16 * i <= query;
          },
          [&](int i, int j, float p, float ds) {
            PTs[(ty + 16 * i) * PS + tx + 16 * j] = p;
            dSTs[(ty + 16 * i) * PS + tx + 16 * j] = ds;
          });
      __syncwarp();  // a key row of PTs and dSTs is written and read by the same half-warp
      wide_accumulate<D>(dv_acc, PTs, dOs, ty, tx);
      wide_accumulate<D>(dk_acc, dSTs, Qs, ty, tx);
    }
  }
  wide_add_rows<S, D>(dk + kv_off, kstride, j0, T, dk_acc, scale, ty, tx);
  wide_add_rows<S, D>(dv + kv_off, kstride, j0, T, dv_acc, 1.0f, ty, tx);
}

template <class S, int D>
__global__ void __launch_bounds__(kWideThreads)
    attention_backward_dq_wide(S* dq, const S* dout, const float* lse, const float* delta,
                               const S* q, const S* k, const S* v, int B, int T, int H, int Hkv) {
  static_assert(D == 64 || D == 128, "the wide kernels are for head dims 64 and 128");
  constexpr int PS = kWideScorePitch;
  extern __shared__ __align__(16) float smem[];  // float4 loads and stores
  float* Qs = smem;                       // (64, D + 4)
  float* dOs = Qs + wide_tile_floats(D);  // (64, D + 4)
  float* Ks = dOs + wide_tile_floats(D);  // (64, D + 4)
  float* Vs = Ks + wide_tile_floats(D);   // (64, D + 4)
  float* dSs = Vs + wide_tile_floats(D);  // (64, 68)
  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kWideTile;
  const int kvh = h / (H / Hkv);
  const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
  const u64 qstride = static_cast<u64>(H) * D, kstride = static_cast<u64>(Hkv) * D;
  const u64 q_off = static_cast<u64>(b) * T * qstride + static_cast<u64>(h) * D;
  const u64 kv_off = static_cast<u64>(b) * T * kstride + static_cast<u64>(kvh) * D;
  const float scale = rsqrtf(static_cast<float>(D)), scale2 = scale * kLog2e;
  wide_load<S, D>(Qs, q + q_off + static_cast<u64>(i0) * qstride, qstride, T - i0, 1.0f);
  wide_load<S, D>(dOs, dout + q_off + static_cast<u64>(i0) * qstride, qstride, T - i0, 1.0f);
  float my_lse2[4], my_delta[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = i0 + ty + 16 * i;
    const u64 at = (static_cast<u64>(b) * H + h) * T + row;
    my_lse2[i] = row < T ? lse[at] * kLog2e : 0.0f;
    my_delta[i] = row < T ? delta[at] : 0.0f;
  }

  float dq_acc[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int x = 0; x < D / 16; ++x) dq_acc[i][x] = 0.0f;
  const int j_end = T < i0 + kWideTile ? T : i0 + kWideTile;
  for (int j0 = 0; j0 < j_end; j0 += kWideTile) {
    __syncthreads();  // the previous K, V and dS are no longer read
    wide_load<S, D>(Ks, k + kv_off + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);
    wide_load<S, D>(Vs, v + kv_off + static_cast<u64>(j0) * kstride, kstride, T - j0, 1.0f);
    __syncthreads();
    wide_softmax_backward<D>(
        Qs, Ks, dOs, Vs, ty, tx, scale2,
        [&](int i, int j, float* l2, float* d) {
          const int row = i0 + ty + 16 * i;
          *l2 = my_lse2[i];
          *d = my_delta[i];
          return row < T && j0 + tx + 16 * j <= row;
        },
        [&](int i, int j, float, float ds) { dSs[(ty + 16 * i) * PS + tx + 16 * j] = ds; });
    __syncwarp();  // a row of dSs is written and read by the same half-warp
    wide_accumulate<D>(dq_acc, dSs, Ks, ty, tx);
  }
  wide_add_rows<S, D>(dq + q_off, qstride, i0, T, dq_acc, scale, ty, tx);
}

}  // namespace leap::cuda::kernels
