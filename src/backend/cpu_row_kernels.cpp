// Row kernels (see cpu_row_kernels.h), with load-time selection of an AVX2 build on x86-64.
#include "backend/cpu_row_kernels.h"

#include <cmath>
#include <limits>

#include "backend/cpu_math.h"

// Not in sanitizer builds: the clones' ifunc resolver runs while the dynamic loader relocates,
// before the sanitizer's runtime is up, and its instrumented code crashes there (TSan).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define LEAP_ROW_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LEAP_ROW_CLONES
#endif

namespace leap::backend::rows {

LEAP_ROW_CLONES void softmax(float* s, int n) {
  // The max is exact in any order, so it vectorises (as a serial chain of scalar max it took
  // over half of the softmax's time) without changing a bit.
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; ++j) {
    s[j] = exp_fast(s[j] - mx);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j < n; ++j) s[j] *= inv;
}

LEAP_ROW_CLONES void softmax_backward(float* dr, const float* p, int n, float scale) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; ++j) sum += p[j] * dr[j];
  for (int j = 0; j < n; ++j) dr[j] = p[j] * (dr[j] - sum) * scale;
}

LEAP_ROW_CLONES void swiglu_forward(float* y, const float* g, const float* u, int I) {
  for (int i = 0; i < I; ++i) y[i] = g[i] / (1.0f + exp_fast(-g[i])) * u[i];
}

LEAP_ROW_CLONES void swiglu_backward(float* dg, float* du, const float* dy, const float* g,
                                     const float* u, int I) {
  // silu(g) = g*s with s = sigmoid(g); silu'(g) = s * (1 + g * (1 - s)).
  for (int i = 0; i < I; ++i) {
    const float s = 1.0f / (1.0f + exp_fast(-g[i]));
    dg[i] += dy[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
    du[i] += dy[i] * g[i] * s;
  }
}

LEAP_ROW_CLONES float logsumexp(const float* z, int V, float s) {
  float mx = z[0];
#pragma omp simd reduction(max : mx)
  for (int v = 1; v < V; ++v) mx = z[v] > mx ? z[v] : mx;
  // s > 0 and rounding is monotone, so s*mx is the largest s*z[v].
  const float smx = s * mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int v = 0; v < V; ++v) sum += exp_fast(s * z[v] - smx);
  return smx + std::log(sum);
}

LEAP_ROW_CLONES void softmax_scaled_sub(float* dz, const float* z, float lse, float g, int V,
                                        float s) {
  for (int v = 0; v < V; ++v) dz[v] -= g * exp_fast(s * z[v] - lse);
}

}  // namespace leap::backend::rows
