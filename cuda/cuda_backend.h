// The CUDA backend: backend.h's op interface on one GPU. GEMMs run on tensor cores in bf16
// through cuBLASLt with fp32 accumulation; everything else runs the kernels of cuda/kernels/.
//
// How the fp32 interface carries bf16 compute (docs/cuda_backend.md):
//  - every float* is an fp32 device buffer: master weights, parameter gradients, AdamW moments,
//    activations and their gradients. So the model code, the optimizer and checkpoints are the
//    same for both backends, and the CPU backend's results are untouched;
//  - GEMMs read bf16: weights through ComputeCopies (bf16 copies refreshed only after a weight is
//    written), activations and upstream gradients rounded to bf16 into scratch per call. Outputs
//    and accumulated gradients stay fp32 (beta = 1 accumulation in cuBLASLt);
//  - the other ops run the kernels with storage type T = float and fp32 arithmetic;
//  - except for a model that keeps its matrices in bf16 only (alloc_weights, bf16_weights.h):
//    there the fp32 pointers into the matrices stand for bf16 elements, which the GEMMs read
//    directly and the memory ops convert.
// Ordering: every op is issued on ctx.compute() in call order; download() and sum_squares()
// wait for it. Integer arrays arrive in host memory and are staged into device scratch on the
// same stream, so the host may reuse them as soon as the op returns.
// Attention saves the per-row logsumexp (B, H, T) and a copy of its output (the backward's
// rowsum(dout * out) needs it and the interface does not pass it) instead of the probabilities;
// the backward recomputes them.
#pragma once

#include <map>
#include <vector>

#include "backend/backend.h"
#include "cuda/bf16_weights.h"
#include "cuda/compute_copies.h"
#include "cuda/cublaslt_gemm.h"
#include "cuda/cuda_context.h"
#include "cuda/device_buffer.h"

namespace leap::cuda {

class CudaBackend final : public backend::Backend {
 public:
  explicit CudaBackend(CudaContext& ctx);
  ~CudaBackend() override;
  const char* name() const override { return "cuda"; }
  bool host_memory() const override { return false; }
  void external_write(const float* p, size_t n) override { weights_.invalidate(p, n); }
  void bind_calling_thread() override;
  CudaContext& context() { return *ctx_; }
  const GemmRunner& gemm() const { return gemm_; }

  float* alloc_floats(size_t n) override;
  // The matrices in bf16 only (bf16_weights.h): every op that reads or writes them goes through
  // their bf16 buffer.
  float* alloc_weights(size_t n, size_t bf16_floats) override;
  void free_floats(float* p) override;
  const Bf16Weights& bf16_weights() const { return bf16_weights_; }
  void zero(float* p, size_t n) override;
  void copy(float* dst, const float* src, size_t n) override;
  void upload(float* dst, const float* host, size_t n) override;
  void download(float* host, const float* src, size_t n) override;
  void round_to_bf16(float* dst, const float* src, size_t n) override;
  void widen_from_bf16(float* dst, const float* src, size_t n) override;

  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                      int IC, int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int N, int IC, int OC) override;

  void embedding_forward(float* out, const int32_t* tokens, const float* wte, int N,
                         int C) override;
  void embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int N,
                          int C) override;

  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, int N, int C) override;

  void rope_forward(float* out, const float* inp, const float* cos_table, const float* sin_table,
                    const int32_t* pos, int N, int H, int D) override;
  void rope_backward(float* dinp, const float* dout, const float* cos_table, const float* sin_table,
                     const int32_t* pos, int N, int H, int D) override;

  size_t attention_saved_floats(int B, int T, int H, int D) const override;
  void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                         int B, int T, int H, int Hkv, int D) override;
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att,
                          const float* q, const float* k, const float* v, int B, int T, int H,
                          int Hkv, int D) override;
  void kv_cache_write(float* k_cache, float* v_cache, const float* k, const float* v,
                      const int32_t* slot, const int32_t* pos, int rows, int maxT, int Hkv,
                      int D, backend::KvDtype dtype) override;
  void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache,
                        const int32_t* block_table, int max_blocks, const int32_t* len, int n,
                        int block_size, int H, int Hkv, int D, backend::KvDtype dtype) override;

  void swiglu_forward(float* out, const float* inp, int N, int I) override;
  void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int I) override;

  void add_forward(float* out, const float* a, const float* b, size_t n) override;

  void logprob_forward(float* logprobs, float* lse, const float* logits, const int32_t* targets,
                       int N, int V, float inv_temp) override;
  void logprob_backward(float* dlogits, const float* dlogprobs, const float* logits,
                        const float* lse, const int32_t* targets, int N, int V,
                        float inv_temp) override;

  void sample_rows(int32_t* ids, float* logprobs, const float* logits, const double* uniforms,
                   int N, int V, const backend::TokenRule& rule, int sample_below) override;

  double sum_squares(const float* x, size_t n) override;
  void adamw_update(float* params, float* m, float* v, const float* grads, size_t n, float lr,
                    float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                    int t) override;

 private:
  // Stages a host integer array into device scratch slot `slot` on the compute stream. RoPE's
  // positions have a slot of their own, so the copy is skipped for every layer after the first
  // (it shared slot 3 with the decode attention's lengths, which made every layer of a decode
  // step copy both arrays again, each a wait on the stream).
  static constexpr int kPositionsSlot = 6;
  static constexpr int kStagingSlots = 7;
  const int32_t* stage(int slot, const int32_t* host, size_t n);
  // Rounds an fp32 activation to bf16 into scratch slot `slot` (0 or 1) for a GEMM operand.
  const __nv_bfloat16* operand_bf16(int slot, const float* x, size_t n);
  // A device vector of n ones (the dbias reduction is a GEMV against it).
  const float* ones(size_t n);
  // The bf16 a GEMM reads for weight[0, n): the weight's own where its matrices are bf16 only,
  // else its compute copy.
  const __nv_bfloat16* weight_bf16(const float* weight, size_t n);
  // Host <-> the bf16 matrices through fp32 staging of at most kStagingFloats (memory_plan.cpp
  // counts it): rounded on the way in, widened on the way out.
  static constexpr size_t kStagingFloats = size_t{8} << 20;
  void upload_bf16(__nv_bfloat16* dst, const float* host, size_t n);
  void download_bf16(float* host, const __nv_bfloat16* src, size_t n);

  CudaContext* ctx_;
  GemmRunner gemm_;
  ComputeCopies weights_;
  Bf16Weights bf16_weights_;
  DeviceBuffer wide_;                     // upload_bf16 and download_bf16's fp32 staging
  std::map<float*, size_t> allocations_;  // backend buffers and their sizes, for free_floats
  DeviceBuffer operands_[2];
  // Slots: 0 tokens or targets; 1 a second index array; 2-3 the decode attention's block tables
  // and lengths (2 also the embedding backward's rows); 4-5 the KV-cache write's blocks and
  // offsets; 6 RoPE's positions. Separate slots keep a layer's arrays staged across the layers.
  DeviceBuffer staged_[kStagingSlots];
  std::vector<int32_t> staged_host_[kStagingSlots];  // what each slot holds (skips repeated copies)
  const int32_t* staged_ptr_[kStagingSlots] = {};
  DeviceBuffer partials_;  // sum_squares partials and the result (doubles)
  DeviceBuffer sampled_;   // sample_rows: the uniforms in, the ids and log-probabilities out
  DeviceBuffer ones_;
  DeviceBuffer bias_;  // an aligned copy of a misaligned bias
  size_t ones_n_ = 0;
};

}  // namespace leap::cuda
