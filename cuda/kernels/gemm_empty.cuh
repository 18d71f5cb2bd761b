// The GEMM with an empty inner dimension (k = 0): D = alpha A B + beta D (+ bias) is then
// D = beta D (+ bias), which cuBLASLt is not asked to do (it rejects k = 0). D is fp32,
// column-major (m, n) with leading dimension ldd, as cuBLASLt sees it; bias (m) may be null.
// beta = 0 writes without reading D, as BLAS does, so NaN or garbage in D does not survive.
//
// Launch: grid elementwise_blocks(m * n), block kElementwiseThreads, no shared memory.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

// A template (on D's type, float here) like every kernel of these headers, so that including
// the header twice defines nothing twice.
template <class F>
__global__ void gemm_empty_epilogue(F* d, const F* bias, int m, int n, int ldd, float beta) {
  const u64 total = static_cast<u64>(m) * n;
  for (u64 e = grid_first(); e < total; e += grid_stride()) {
    const u64 i = e % m, j = e / m;
    F* at = d + j * ldd + i;
    const F kept = beta == 0.0f ? F(0) : F(beta * *at);
    *at = kept + (bias != nullptr ? bias[i] : F(0));
  }
}

}  // namespace leap::cuda::kernels
