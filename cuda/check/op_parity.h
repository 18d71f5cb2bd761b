// Op parity against PyTorch's float64 reference (benchmarks/gpu/op_reference.py), on any
// backend: `leap_gpu_check ops` runs it on the CUDA backend, and a CPU test runs it on the CPU
// backend, which checks the reference's conventions and these comparisons without a GPU.
// Error: normalised ||got - want|| / ||want||. Bounds: 1e-2 where a GEMM rounds its operands to
// bf16, 1e-4 for the fp32 kernels (only the summation order differs), 1e-12 relative for the sum
// of squares (double accumulation), 0 for the KV-cache append (a copy). Backward outputs start
// at zero, so accumulation gives the gradient. Ops: matmul, RMSNorm, SwiGLU, attention,
// log-probabilities, RoPE, embedding, AdamW, sum of squares, and the decode pair
// (kv_cache_write, attention_decode).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "common/status.h"
#include "cuda/check/json_record.h"
#include "cuda/check/reference_dir.h"

namespace leap::cuda::check {

// Each comparison's error goes into the record under the op's name; all_pass says whether all
// kept within their bounds.
struct OpComparison {
  JsonRecord* record;
  bool all_pass = true;
  // Normalised error of got against want, held to tol; printed to stderr and recorded.
  void add(const char* name, const std::vector<float>& got, const std::vector<float>& want,
           double tol);
  // A double result (the sum of squares), by relative error.
  void add_scalar(const char* name, double got, double want, double tol);
};

// Runs every op of the reference on `be` and compares; a Status only when the reference lacks
// a tensor or a shape.
Status compare_ops(const ReferenceDir& ref, backend::Backend& be, OpComparison& cmp);

}  // namespace leap::cuda::check
