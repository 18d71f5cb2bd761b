// CpuBackend causal grouped-query attention: full-sequence forward/backward (training, prefill)
// and single-token decode against a KV cache. Query head h reads KV head h / (H / Hkv) (HF's
// repeat_kv). Only the causal lower triangle is computed; att keeps the probabilities.
// Work is split over (batch, head) for the forward and over (batch, KV head) for the backward,
// so the query heads sharing a KV head accumulate into dk/dv in one thread: no races, fixed
// order, deterministic.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/cpu_parallel.h"

namespace leap::backend {
namespace {

inline float dot(const float* a, const float* b, int D) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}

inline void axpy(float* y, float a, const float* x, int D) {
#pragma omp simd
  for (int d = 0; d < D; ++d) y[d] += a * x[d];
}

// Softmax of scores[0..n) in place, max-subtracted.
inline void softmax_inplace(float* s, int n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  float inv = 1.0f / sum;
  for (int j = 0; j < n; ++j) s[j] *= inv;
}

}  // namespace

void CpuBackend::attention_forward(float* out, float* att, const float* q, const float* k, const float* v, int B,
                                   int T, int H, int Hkv, int D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv;
#pragma omp parallel for collapse(2) schedule(static) if (worth_threads(static_cast<size_t>(B) * H * T * T * D / 2))
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const int kvh = h / group;
      for (int i = 0; i < T; ++i) {
        const float* qi = q + ((static_cast<size_t>(b) * T + i) * H + h) * D;
        float* p = att + ((static_cast<size_t>(b) * H + h) * T + i) * T;
        for (int j = 0; j <= i; ++j)
          p[j] = dot(qi, k + ((static_cast<size_t>(b) * T + j) * Hkv + kvh) * D, D) * scale;
        softmax_inplace(p, i + 1);
        for (int j = i + 1; j < T; ++j) p[j] = 0.0f;
        float* oi = out + ((static_cast<size_t>(b) * T + i) * H + h) * D;
        for (int d = 0; d < D; ++d) oi[d] = 0.0f;
        for (int j = 0; j <= i; ++j) axpy(oi, p[j], v + ((static_cast<size_t>(b) * T + j) * Hkv + kvh) * D, D);
      }
    }
  }
}

void CpuBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att,
                                    const float* q, const float* k, const float* v, int B, int T, int H, int Hkv,
                                    int D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv;
#pragma omp parallel if (worth_threads(static_cast<size_t>(B) * H * T * T * D))
  {
    std::vector<float> dp(static_cast<size_t>(T));
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int kvh = 0; kvh < Hkv; ++kvh) {
        auto kv_row = [&](int j) { return ((static_cast<size_t>(b) * T + j) * Hkv + kvh) * D; };
        for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
          for (int i = 0; i < T; ++i) {
            const size_t qrow = ((static_cast<size_t>(b) * T + i) * H + h) * D;
            const float* p = att + ((static_cast<size_t>(b) * H + h) * T + i) * T;
            const float* doi = dout + qrow;
            float sum = 0.0f;
            for (int j = 0; j <= i; ++j) {
              dp[j] = dot(doi, v + kv_row(j), D);
              sum += p[j] * dp[j];
              axpy(dv + kv_row(j), p[j], doi, D);
            }
            float* dqi = dq + qrow;
            const float* qi = q + qrow;
            for (int j = 0; j <= i; ++j) {
              float ds = p[j] * (dp[j] - sum) * scale;
              axpy(dqi, ds, k + kv_row(j), D);
              axpy(dk + kv_row(j), ds, qi, D);
            }
          }
        }
      }
    }
  }
}

void CpuBackend::attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache,
                                  const int32_t* slot, const int32_t* len, int n, int maxT, int H, int Hkv, int D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int group = H / Hkv;
#pragma omp parallel if (worth_threads(static_cast<size_t>(n) * H * maxT * D))
  {
    std::vector<float> s(static_cast<size_t>(maxT));
#pragma omp for collapse(2) schedule(static)
    for (int r = 0; r < n; ++r) {
      for (int h = 0; h < H; ++h) {
        const int kvh = h / group;
        const size_t base = static_cast<size_t>(slot[r]) * maxT * Hkv * D;
        const float* qr = q + (static_cast<size_t>(r) * H + h) * D;
        for (int j = 0; j < len[r]; ++j) s[j] = dot(qr, k_cache + base + (static_cast<size_t>(j) * Hkv + kvh) * D, D) * scale;
        softmax_inplace(s.data(), len[r]);
        float* o = out + (static_cast<size_t>(r) * H + h) * D;
        for (int d = 0; d < D; ++d) o[d] = 0.0f;
        for (int j = 0; j < len[r]; ++j) axpy(o, s[j], v_cache + base + (static_cast<size_t>(j) * Hkv + kvh) * D, D);
      }
    }
  }
}

}  // namespace leap::backend
