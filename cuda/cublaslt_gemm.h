// cuBLASLt matmuls for the CUDA backend: D = alpha * op(A) @ op(B) + beta * C (+ bias), in
// cuBLAS's column-major terms, with fp32 accumulation. Each distinct problem (shape, transposes,
// types, leading dimensions, epilogue, output alignment) gets a plan: its descriptors and the
// algorithm cuBLASLt's heuristic chose, created on first use and reused afterwards, so the
// heuristic runs once per shape rather than once per call.
//
// The row-major products of backend.h map onto this as follows (X (N, IC), W (OC, IC)):
//   Y (N, OC) = X @ W^T            -> m=OC, n=N, k=IC, A=W  op T (ld IC), B=X  op N (ld IC)
//   dX (N, IC) += dY @ W           -> m=IC, n=N, k=OC, A=W  op N (ld IC), B=dY op N (ld OC)
//   dW (OC, IC) += dY^T @ X        -> m=IC, n=OC, k=N, A=X  op N (ld IC), B=dY op T (ld OC)
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "cuda/cuda_context.h"

namespace leap::cuda {

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  cudaDataType_t type_ab = CUDA_R_16BF;  // A and B
  cudaDataType_t type_cd = CUDA_R_32F;   // C and D (the same buffer here)
  int lda = 0, ldb = 0, ldc = 0;
  bool bias = false;  // fp32 bias of m entries added to every column
  auto key() const {
    return std::tuple(m, n, k, trans_a, trans_b, int(type_ab), int(type_cd), lda, ldb, ldc, bias);
  }
};

class GemmRunner {
 public:
  explicit GemmRunner(CudaContext& ctx) : ctx_(&ctx) {}
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Enqueues D = alpha op(A) op(B) + beta D (+ bias) on the compute stream. The pointers'
  // alignments are part of the plan's key: an algorithm chosen for 256-byte aligned buffers
  // (the backend's own copies) may fault on a view into an arena that is only 4-byte aligned.
  void run(const GemmProblem& p, const void* a, const void* b, float* d, float alpha, float beta,
           const float* bias = nullptr);
  size_t plans() const { return plans_.size(); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, cd = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  struct Alignments {
    uint32_t a, b, d;
  };
  using Key = std::tuple<decltype(GemmProblem{}.key()), uint32_t, uint32_t, uint32_t>;
  static constexpr size_t kMaxPlans = 4096;
  Plan& plan_for(const GemmProblem& p, Alignments align);
  void drop_plans();

  CudaContext* ctx_;
  std::map<Key, Plan> plans_;
};

}  // namespace leap::cuda
