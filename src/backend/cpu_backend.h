// The CPU backend: fp32 on OpenBLAS (cblas_sgemm) for the matmuls and plain loops, threaded with
// OpenMP, for everything else. It is the readable reference the other backends are checked
// against, so it avoids intrinsics; hot loops are written so the compiler vectorises them.
// Determinism: every reduction is done by one thread in a fixed order, and work is split by
// static OpenMP schedules, so a rerun with the same thread count is bit-identical.
#pragma once

#include <utility>
#include <vector>

#include "backend/backend.h"

namespace leap::backend {

class CpuBackend final : public Backend {
 public:
  // threads: OpenMP and OpenBLAS threads; 0 keeps the libraries' defaults (all cores).
  explicit CpuBackend(int threads = 0);
  const char* name() const override { return "cpu"; }
  int threads() const { return threads_; }
  void bind_calling_thread() override;

  float* alloc_floats(size_t n) override;
  float* alloc_weights(size_t n, size_t bf16_floats) override;
  void free_floats(float* p) override;
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

  void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                         int B, int T, int H, int Hkv, int D) override;
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att,
                          const float* q, const float* k, const float* v, int B, int T, int H,
                          int Hkv, int D) override;
  void kv_cache_write(float* k_cache, float* v_cache, const float* k, const float* v,
                      const int32_t* slot, const int32_t* pos, int rows, int maxT, int Hkv, int D,
                      KvDtype dtype) override;
  void attention_decode(float* out, const float* q, const float* k_cache, const float* v_cache,
                        const int32_t* block_table, int max_blocks, const int32_t* len, int n,
                        int block_size, int H, int Hkv, int D, KvDtype dtype) override;

  void swiglu_forward(float* out, const float* inp, int N, int I) override;
  void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int I) override;

  void add_forward(float* out, const float* a, const float* b, size_t n) override;

  void logprob_forward(float* logprobs, float* lse, const float* logits, const int32_t* targets,
                       int N, int V, float inv_temp) override;
  void logprob_backward(float* dlogits, const float* dlogprobs, const float* logits,
                        const float* lse, const int32_t* targets, int N, int V,
                        float inv_temp) override;

  double sum_squares(const float* x, size_t n) override;
  void adamw_update(float* params, float* m, float* v, const float* grads, size_t n, float lr,
                    float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                    int t) override;

 private:
  // Rounds [p, p + n)'s floats that lie in a buffer's bf16 part (alloc_weights) to bf16 values.
  void round_bf16_parts(float* p, size_t n) const;

  int threads_ = 0;
  std::vector<std::pair<float*, size_t>> bf16_parts_;  // alloc_weights' buffers: start, bf16 floats
};

}  // namespace leap::backend
