// gemm(): OpenMP row split over single-threaded OpenBLAS calls (see cpu_gemm.h).
#include "backend/cpu_gemm.h"

#include <omp.h>

#include "backend/cpu_parallel.h"

namespace leap::backend {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans,
                        tb = trans_b ? CblasTrans : CblasNoTrans;
  const size_t work = static_cast<size_t>(M) * N * K;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1 || M < 2 * 16 || !worth_threads(work)) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Row blocks of C, multiples of 16 so every block keeps whole register tiles.
  int rows = (M + threads - 1) / threads;
  rows = (rows + 15) / 16 * 16;
  const int blocks = (M + rows - 1) / rows;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int blk = 0; blk < blocks; ++blk) {
    const int m0 = blk * rows, m = M - m0 < rows ? M - m0 : rows;
    // Row m0 of op(A): a row of A, or a column of A when A is stored transposed.
    const float* a = trans_a ? A + m0 : A + static_cast<size_t>(m0) * lda;
    cblas_sgemm(CblasRowMajor, ta, tb, m, N, K, alpha, a, lda, B, ldb, beta,
                C + static_cast<size_t>(m0) * ldc, ldc);
  }
}

}  // namespace leap::backend
