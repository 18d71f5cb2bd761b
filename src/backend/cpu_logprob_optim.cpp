// CpuBackend LM-head tail (fused log-softmax + gather, and its backward) and the optimizer ops
// (sum of squares for global-norm clipping, AdamW). Row reductions run in one thread each.
#include <cmath>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/cpu_parallel.h"
#include "backend/cpu_row_kernels.h"

namespace leap::backend {

void CpuBackend::logprob_forward(float* logprobs, float* lse, const float* logits,
                                 const int32_t* targets, int N, int V, float inv_temp) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * V * 4))
  for (int n = 0; n < N; ++n) {
    const float* z = logits + static_cast<size_t>(n) * V;
    lse[n] = rows::logsumexp(z, V, inv_temp);
    logprobs[n] = targets[n] >= 0 ? inv_temp * z[targets[n]] - lse[n] : 0.0f;
  }
}

void CpuBackend::logprob_backward(float* dlogits, const float* dlogprobs, const float* logits,
                                  const float* lse, const int32_t* targets, int N, int V,
                                  float inv_temp) {
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * V * 4))
  for (int n = 0; n < N; ++n) {
    if (targets[n] < 0) continue;
    if (dlogprobs[n] == 0.0f) continue;  // masked tokens: nothing flows back
    // d/dlogits = s * d/dz for z = s * logits.
    const float g = inv_temp * dlogprobs[n];
    const float* z = logits + static_cast<size_t>(n) * V;
    float* dz = dlogits + static_cast<size_t>(n) * V;
    rows::softmax_scaled_sub(dz, z, lse[n], g, V, inv_temp);
    dz[targets[n]] += g;
  }
}

double CpuBackend::sum_squares(const float* x, size_t n) {
  // Fixed-size chunks summed in order: the result does not depend on the thread count.
  constexpr size_t kChunk = 1 << 14;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static) if (worth_threads(n))
  for (size_t c = 0; c < chunks; ++c) {
    size_t end = (c + 1) * kChunk < n ? (c + 1) * kChunk : n;
    double s = 0.0;
    for (size_t i = c * kChunk; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[c] = s;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void CpuBackend::adamw_update(float* params, float* m, float* v, const float* grads, size_t n,
                              float lr, float beta1, float beta2, float eps, float weight_decay,
                              float grad_scale, int t) {
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(t));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(t));
  const float bc2_sqrt = std::sqrt(bc2);
  const float step = lr / bc1;
  const float decay = 1.0f - lr * weight_decay;
#pragma omp parallel for schedule(static) if (worth_threads(n * 8))
  for (size_t i = 0; i < n; ++i) {
    float g = grads[i] * grad_scale;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    // The same operation order as torch.optim.AdamW (decay first, then the Adam step).
    float p = params[i] * decay;
    params[i] = p - step * m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps);
  }
  round_bf16_parts(params, n);
}

}  // namespace leap::backend
