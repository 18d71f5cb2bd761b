// CpuBackend matmuls on OpenBLAS (through gemm(), cpu_gemm.h). out = inp @ W^T + b with W stored
// (OC, IC) as in PyTorch's nn.Linear, so HF weights are used without transposing. Backward
// accumulates (beta = 1).
#include "backend/cpu_backend.h"
#include "backend/cpu_gemm.h"
#include "backend/cpu_parallel.h"

namespace leap::backend {

void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight,
                                const float* bias, int N, int IC, int OC) {
  float beta = 0.0f;
  if (bias != nullptr) {
    // Seed the output with the bias so the GEMM adds onto it: no second pass over out.
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * OC))
    for (int n = 0; n < N; ++n) {
      float* row = out + static_cast<size_t>(n) * OC;
      for (int o = 0; o < OC; ++o) row[o] = bias[o];
    }
    beta = 1.0f;
  }
  gemm(false, true, N, OC, IC, 1.0f, inp, IC, weight, IC, beta, out, OC);
}

void CpuBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, int N, int IC, int OC) {
  if (dinp != nullptr) gemm(false, false, N, IC, OC, 1.0f, dout, OC, weight, IC, 1.0f, dinp, IC);
  if (dweight != nullptr) gemm(true, false, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
  if (dbias != nullptr) {
    // Each output column is summed by one thread, in row order: deterministic.
#pragma omp parallel for schedule(static) if (worth_threads(static_cast <size_t>(N) * OC))
    for (int o = 0; o < OC; ++o) {
      float s = 0.0f;
      for (int n = 0; n < N; ++n) s += dout[static_cast<size_t>(n) * OC + o];
      dbias[o] += s;
    }
  }
}

}  // namespace leap::backend
