// Row-major sgemm on OpenBLAS, threaded by OpenMP instead of OpenBLAS's own pool.
// OpenBLAS runs single-threaded (set once by CpuBackend); large products are split by rows of
// C over the OpenMP team. One thread pool for GEMMs and the other ops avoids two pools spinning
// against each other on few cores, and the split depends only on the thread count, so results
// stay deterministic.
#pragma once

#include "cblas.h"

namespace leap::backend {

// C (M, N) = alpha * op(A) op(B) + beta * C, row-major, like cblas_sgemm.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace leap::backend
