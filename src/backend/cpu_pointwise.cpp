// CpuBackend row-wise ops: embedding, RMSNorm, RoPE (rotate-half), SwiGLU and the residual add.
// Each row is handled by one thread; reductions run in a fixed order (deterministic).
#include <cmath>

#include "backend/cpu_backend.h"
#include "backend/cpu_parallel.h"
#include "backend/cpu_row_kernels.h"

namespace leap::backend {

void CpuBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, int N,
                                   int C) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * C))
  for (int n = 0; n < N; ++n) {
    const float* src = wte + static_cast<size_t>(tokens[n]) * C;
    float* dst = out + static_cast<size_t>(n) * C;
    for (int c = 0; c < C; ++c) dst[c] = src[c];
  }
}

void CpuBackend::embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int N,
                                    int C) {
  // Rows may repeat a token, so they would race in parallel; the pass is O(N*C) and cheap.
  for (int n = 0; n < N; ++n) {
    float* dst = dwte + static_cast<size_t>(tokens[n]) * C;
    const float* src = dout + static_cast<size_t>(n) * C;
    for (int c = 0; c < C; ++c) dst[c] += src[c];
  }
}

void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                 int N, int C, float eps) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * C * 2))
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    float* y = out + static_cast<size_t>(n) * C;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) ss += x[c] * x[c];
    float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    rstd[n] = r;
    for (int c = 0; c < C; ++c) y[c] = x[c] * r * weight[c];
  }
}

void CpuBackend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int N, int C) {
  // dx = r * (w*dy) - r^3/C * x * sum(w*dy*x);  dw += dy * x * r.
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * C * 4))
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    const float* dy = dout + static_cast<size_t>(n) * C;
    float* dx = dinp + static_cast<size_t>(n) * C;
    float r = rstd[n];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
    float k = dot * r * r * r / static_cast<float>(C);
    for (int c = 0; c < C; ++c) dx[c] += r * weight[c] * dy[c] - k * x[c];
  }
  // The weight gradient sums over rows: one thread per channel block keeps the order fixed.
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * C * 2))
  for (int c0 = 0; c0 < C; c0 += 16) {
    int c1 = c0 + 16 < C ? c0 + 16 : C;
    float acc[16] = {};
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<size_t>(n) * C;
      const float* dy = dout + static_cast<size_t>(n) * C;
      for (int c = c0; c < c1; ++c) acc[c - c0] += dy[c] * x[c] * rstd[n];
    }
    for (int c = c0; c < c1; ++c) dweight[c] += acc[c - c0];
  }
}

namespace {

// Rotate-half RoPE over (N, H, D) rows. The rotation is orthogonal, so the backward is the same
// loop with the angle negated (sign = -1), accumulating into dinp instead of writing.
template <bool kAccumulate>
void rope_rotate(float* out, const float* inp, const float* cos_table, const float* sin_table, const int32_t* pos,
                 int N, int H, int D, float sign) {
  const int half = D / 2;
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * H * D * 2))
  for (int n = 0; n < N; ++n) {
    const float* cs = cos_table + static_cast<size_t>(pos[n]) * half;
    const float* sn = sin_table + static_cast<size_t>(pos[n]) * half;
    for (int h = 0; h < H; ++h) {
      const float* x = inp + (static_cast<size_t>(n) * H + h) * D;
      float* y = out + (static_cast<size_t>(n) * H + h) * D;
      for (int i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half], s = sign * sn[i];
        const float lo = a * cs[i] - b * s, hi = b * cs[i] + a * s;
        if constexpr (kAccumulate) {
          y[i] += lo;
          y[i + half] += hi;
        } else {
          y[i] = lo;
          y[i + half] = hi;
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::rope_forward(float* out, const float* inp, const float* cos_table,
                              const float* sin_table, const int32_t* pos, int N, int H, int D) {
  rope_rotate<false>(out, inp, cos_table, sin_table, pos, N, H, D, 1.f);
}

void CpuBackend::rope_backward(float* dinp, const float* dout, const float* cos_table,
                               const float* sin_table, const int32_t* pos, int N, int H, int D) {
  rope_rotate<true>(dinp, dout, cos_table, sin_table, pos, N, H, D, -1.f);
}

void CpuBackend::swiglu_forward(float* out, const float* inp, int N, int I) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * I * 16))
  for (int n = 0; n < N; ++n) {
    const float* g = inp + static_cast<size_t>(n) * 2 * I;
    const float* u = g + I;
    float* y = out + static_cast<size_t>(n) * I;
    rows::swiglu_forward(y, g, u, I);
  }
}

void CpuBackend::swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int I) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * I * 16))
  for (int n = 0; n < N; ++n) {
    const float* g = inp + static_cast<size_t>(n) * 2 * I;
    const float* u = g + I;
    float* dg = dinp + static_cast<size_t>(n) * 2 * I;
    float* du = dg + I;
    const float* dy = dout + static_cast<size_t>(n) * I;
    rows::swiglu_backward(dg, du, dy, g, u, I);
  }
}

void CpuBackend::add_forward(float* out, const float* a, const float* b, size_t n) {
#pragma omp parallel for schedule(static) if (worth_threads(n))
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace leap::backend
