// CpuBackend causal grouped-query attention: full-sequence forward/backward (training, prefill)
// on single-threaded sgemm calls per (sequence, head) and row block, and single-token decode
// against a KV cache (fp32 or bf16, widened when gathered) on sgemm calls per (row, KV head). Query head h reads KV head h / (H / Hkv)
// (HF's repeat_kv). Only the causal lower triangle is computed; att keeps the probabilities. Work
// is split over (batch, head) for the forward and over (batch, KV head) for the backward, so the
// query heads sharing a KV head accumulate into dk/dv in one thread: no races, fixed order,
// deterministic.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/cpu_parallel.h"
#include "backend/cpu_row_kernels.h"
#include "cblas.h"
#include "common/bf16.h"

namespace leap::backend {
namespace {

// Query rows per block: the causal structure is exploited per block (keys [0, i0 + m) only).
constexpr int kRowBlock = 64;

}  // namespace

void CpuBackend::attention_forward(float* out, float* att, const float* q, const float* k,
                                   const float* v, int B, int T, int H, int Hkv, int D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv;
  const int HD = H * D, KD = Hkv * D;
#pragma omp parallel for collapse(2) \
    schedule(static) if (worth_threads(static_cast <size_t>(B) * H * T * T * D / 2))
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const float* qb = q + static_cast<size_t>(b) * T * HD + static_cast<size_t>(h) * D;
      const float* kb = k + static_cast<size_t>(b) * T * KD + static_cast<size_t>(h / group) * D;
      const float* vb = v + static_cast<size_t>(b) * T * KD + static_cast<size_t>(h / group) * D;
      float* ob = out + static_cast<size_t>(b) * T * HD + static_cast<size_t>(h) * D;
      float* p = att + (static_cast<size_t>(b) * H + h) * T * T;
      // Row blocks: block [i0, i0+m) only needs keys [0, i0+m), so the upper triangle is skipped.
      for (int i0 = 0; i0 < T; i0 += kRowBlock) {
        const int m = T - i0 < kRowBlock ? T - i0 : kRowBlock, n = i0 + m;
        float* pb = p + static_cast<size_t>(i0) * T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, D, scale,
                    qb + static_cast<size_t>(i0) * HD, HD, kb, KD, 0.0f, pb, T);
        for (int r = 0; r < m; ++r) {
          float* row = pb + static_cast<size_t>(r) * T;
          rows::softmax(row, i0 + r + 1);
          for (int j = i0 + r + 1; j < T; ++j) row[j] = 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, D, n, 1.0f, pb, T, vb, KD, 0.0f,
                    ob + static_cast<size_t>(i0) * HD, HD);
      }
    }
  }
}

void CpuBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout,
                                    const float* att, const float* q, const float* k,
                                    const float* v, int B, int T, int H, int Hkv, int D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv;
  const int HD = H * D, KD = Hkv * D;
#pragma omp parallel if (worth_threads(static_cast <size_t>(B) * H * T * T * D))
  {
    std::vector<float> ds(static_cast<size_t>(kRowBlock) * T);  // dL/dscores of one row block
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int kvh = 0; kvh < Hkv; ++kvh) {
        const size_t kv_off = static_cast<size_t>(b) * T * KD + static_cast<size_t>(kvh) * D;
        for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
          const size_t q_off = static_cast<size_t>(b) * T * HD + static_cast<size_t>(h) * D;
          const float* p = att + (static_cast<size_t>(b) * H + h) * T * T;
          for (int i0 = 0; i0 < T; i0 += kRowBlock) {
            const int m = T - i0 < kRowBlock ? T - i0 : kRowBlock, n = i0 + m;
            const float* pb = p + static_cast<size_t>(i0) * T;
            const float* dob = dout + q_off + static_cast<size_t>(i0) * HD;
            // dP = dO V^T, then the softmax backward dS = P * (dP - sum_j P dP) * scale.
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, D, 1.0f, dob, HD, v + kv_off,
                        KD, 0.0f, ds.data(), n);
            for (int r = 0; r < m; ++r) {
              const float* pr = pb + static_cast<size_t>(r) * T;
              float* dr = ds.data() + static_cast<size_t>(r) * n;
              rows::softmax_backward(dr, pr, n, scale);
            }
            // dV += P^T dO; dQ += dS K; dK += dS^T Q.
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, D, m, 1.0f, pb, T, dob, HD,
                        1.0f, dv + kv_off, KD);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, D, n, 1.0f, ds.data(), n,
                        k + kv_off, KD, 1.0f, dq + q_off + static_cast<size_t>(i0) * HD, HD);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, D, m, 1.0f, ds.data(), n,
                        q + q_off + static_cast<size_t>(i0) * HD, HD, 1.0f, dk + kv_off, KD);
          }
        }
      }
    }
  }
}

void CpuBackend::kv_cache_write(float* k_cache, float* v_cache, const float* k, const float* v,
                                const int32_t* slot, const int32_t* pos, int rows, int maxT,
                                int Hkv, int D, KvDtype dtype) {
  const size_t KD = static_cast<size_t>(Hkv) * D;
  for (int r = 0; r < rows; ++r) {
    const size_t at = (static_cast<size_t>(slot[r]) * maxT + pos[r]) * KD;
    const float* kr = k + static_cast<size_t>(r) * KD;
    const float* vr = v + static_cast<size_t>(r) * KD;
    if (dtype == KvDtype::kF32) {
      std::copy_n(kr, KD, k_cache + at);
      std::copy_n(vr, KD, v_cache + at);
      continue;
    }
    f32_to_bf16(kr, KD, reinterpret_cast<uint16_t*>(k_cache) + at);
    f32_to_bf16(vr, KD, reinterpret_cast<uint16_t*>(v_cache) + at);
  }
}

namespace {

// D cached values at element `at` of a cache of `dtype`, as fp32.
void gather_cached(float* dst, const float* cache, size_t at, int D, KvDtype dtype) {
  if (dtype == KvDtype::kF32) {
    std::copy_n(cache + at, D, dst);
    return;
  }
  bf16_to_f32(reinterpret_cast<const uint16_t*>(cache) + at, static_cast<size_t>(D), dst);
}

}  // namespace

void CpuBackend::attention_decode(float* out, const float* q, const float* k_cache,
                                  const float* v_cache, const int32_t* block_table, int max_blocks,
                                  const int32_t* len, int n, int block_size, int H, int Hkv,
                                  int D, KvDtype dtype) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv, KD = Hkv * D;
  size_t work = 0;
  int longest = 0;
  for (int r = 0; r < n; ++r) {
    work += static_cast<size_t>(len[r]) * H * D * 4;
    longest = std::max(longest, len[r]);
  }
  // The query heads sharing a KV head are adjacent in q, so each (row, KV head) is two small
  // GEMMs that read the cached keys and values once for the whole group. The row's keys and
  // values are first gathered from its blocks into one contiguous run, so the arithmetic is the
  // same whatever blocks the positions live in (a sequence samples the same wherever the pool put
  // it).
#pragma omp parallel if (worth_threads(work))
  {
    std::vector<float> s(static_cast<size_t>(group) * longest),
        kbuf(static_cast<size_t>(longest) * D), vbuf(kbuf.size());
#pragma omp for collapse(2) schedule(static)
    for (int r = 0; r < n; ++r) {
      for (int kvh = 0; kvh < Hkv; ++kvh) {
        const int L = len[r];
        const int32_t* table = block_table + static_cast<size_t>(r) * max_blocks;
        for (int j = 0; j < L; ++j) {
          const size_t at = (static_cast<size_t>(table[j / block_size]) * block_size +
                             j % block_size) * KD + static_cast<size_t>(kvh) * D;
          gather_cached(kbuf.data() + static_cast<size_t>(j) * D, k_cache, at, D, dtype);
          gather_cached(vbuf.data() + static_cast<size_t>(j) * D, v_cache, at, D, dtype);
        }
        const size_t qo = (static_cast<size_t>(r) * H + static_cast<size_t>(kvh) * group) * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, group, L, D, scale, q + qo, D,
                    kbuf.data(), D, 0.0f, s.data(), L);
        for (int g = 0; g < group; ++g) rows::softmax(s.data() + static_cast<size_t>(g) * L, L);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, group, D, L, 1.0f, s.data(), L,
                    vbuf.data(), D, 0.0f, out + qo, D);
      }
    }
  }
}

}  // namespace leap::backend
