// GemmRunner: cuBLASLt plans cached per problem, and the matmul call itself.
#include "cuda/cublaslt_gemm.h"

#include <string>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"

namespace leap::cuda {

namespace {

// The largest power of two (at most 256) dividing the address: what cuBLASLt may assume.
uint32_t alignment_of(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

template <class V>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)));
}

}  // namespace

GemmRunner::~GemmRunner() { drop_plans(); }

// Descriptors are host objects that cublasLtMatmul reads when it enqueues, so dropping them never
// disturbs a matmul in flight.
void GemmRunner::drop_plans() {
  for (auto& [key, plan] : plans_) {
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.cd);
    cublasLtMatmulDescDestroy(plan.desc);
  }
  plans_.clear();
}

GemmRunner::Plan& GemmRunner::plan_for(const GemmProblem& p, Alignments align) {
  Key key{p.key(), align.a, align.b, align.d};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  // RL batches change the row count N = B*T from micro-batch to micro-batch, each a new problem
  // for every GEMM of the model: a long run would keep adding plans. Past the bound they are all
  // dropped and made again as used (a heuristic query each, microseconds).
  if (plans_.size() >= kMaxPlans) drop_plans();

  Plan plan;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  if (p.bias) {
    set_desc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_32F);
  }
  // Stored shapes (rows x cols, column-major) before the transposes.
  const int a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
  const int b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, p.type_ab, a_rows, a_cols, p.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, p.type_ab, b_rows, b_cols, p.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.cd, p.type_cd, p.m, p.n, p.ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = ctx_->workspace_bytes();
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof(ws)));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align.d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align.d}};
  for (const auto& [attr, value] : aligns) {
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  // NOT_SUPPORTED is how the heuristic says "no algorithm" for some problems: the check below
  // then names the shapes and alignments, which a bare status would not.
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx_->lt(), plan.desc, plan.a, plan.b, plan.cd,
                                                           plan.cd, pref, 1, &result, &found);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
    found = 0;
  } else {
    CUBLAS_CHECK(st);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  LEAP_CHECK(found > 0, "cuBLASLt has no algorithm for m=" << p.m << " n=" << p.n << " k=" << p.k
                                                           << " (alignments " << align.a << "/"
                                                           << align.b << "/" << align.d << ")");
  plan.algo = result.algo;
  return plans_.emplace(key, plan).first->second;
}

void GemmRunner::run(const GemmProblem& p, const void* a, const void* b, float* d, float alpha,
                     float beta, const float* bias) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty product: D = beta D (+ bias). cuBLASLt rejects k = 0, so it is not asked.
    if (beta != 1.0f || p.bias)
      launch_gemm_empty_epilogue(d, p.bias ? bias : nullptr, p.m, p.n, p.ldc, beta,
                                 ctx_->compute());
    return;
  }
  Plan& plan = plan_for(p, {alignment_of(a), alignment_of(b), alignment_of(d)});
  if (p.bias) set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  CUBLAS_CHECK(cublasLtMatmul(ctx_->lt(), plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d,
                              plan.cd, d, plan.cd, &plan.algo, ctx_->workspace(),
                              ctx_->workspace_bytes(), ctx_->compute()));
}

}  // namespace leap::cuda
