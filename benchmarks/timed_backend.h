// TimedBackend: a Backend decorator that forwards every op to another backend and adds up the
// wall time spent in each op family. The CPU backend is synchronous, so the times are exact;
// it exists for the benchmarks' per-op split (how much of a step is outside the GEMMs).
#pragma once

#include <array>
#include <chrono>
#include <string>

#include "backend/backend.h"

namespace leap::bench {

enum class OpKind {
  kMatmul,
  kAttention,
  kNorm,
  kRope,
  kSwiglu,
  kEmbedding,
  kLogprob,
  kOptimizer,
  kMemory,
  kCount
};

inline const char* op_kind_name(OpKind k) {
  static const char* names[] = {
      "matmul (sgemm)",         "attention", "rmsnorm",           "rope", "swiglu", "embedding",
      "logprob (lm head tail)", "optimizer", "memory (zero/copy)"};
  return names[static_cast<int>(k)];
}

class TimedBackend final : public backend::Backend {
 public:
  explicit TimedBackend(backend::Backend& inner) : in_(inner) {}
  std::array<double, static_cast<size_t>(OpKind::kCount)> seconds{};
  void reset() { seconds.fill(0.0); }

  const char* name() const override { return in_.name(); }
  bool host_memory() const override { return in_.host_memory(); }
  float* alloc_floats(size_t n) override { return in_.alloc_floats(n); }
  float* alloc_weights(size_t n, size_t bf16_floats) override {
    return in_.alloc_weights(n, bf16_floats);
  }
  void free_floats(float* p) override { in_.free_floats(p); }
  void zero(float* p, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.zero(p, n); });
  }
  void copy(float* d, const float* s, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.copy(d, s, n); });
  }
  void upload(float* d, const float* h, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.upload(d, h, n); });
  }
  void download(float* h, const float* s, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.download(h, s, n); });
  }
  void round_to_bf16(float* d, const float* s, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.round_to_bf16(d, s, n); });
  }
  void widen_from_bf16(float* d, const float* s, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.widen_from_bf16(d, s, n); });
  }
  void matmul_forward(float* o, const float* i, const float* w, const float* b, int N, int IC,
                      int OC) override {
    timed(OpKind::kMatmul, [&] { in_.matmul_forward(o, i, w, b, N, IC, OC); });
  }
  void matmul_backward(float* di, float* dw, float* db, const float* d, const float* i,
                       const float* w, int N, int IC, int OC) override {
    timed(OpKind::kMatmul, [&] { in_.matmul_backward(di, dw, db, d, i, w, N, IC, OC); });
  }
  void embedding_forward(float* o, const int32_t* t, const float* w, int N, int C) override {
    timed(OpKind::kEmbedding, [&] { in_.embedding_forward(o, t, w, N, C); });
  }
  void embedding_backward(float* dw, const float* d, const int32_t* t, int N, int C) override {
    timed(OpKind::kEmbedding, [&] { in_.embedding_backward(dw, d, t, N, C); });
  }
  void rmsnorm_forward(float* o, float* r, const float* i, const float* w, int N, int C,
                       float eps) override {
    timed(OpKind::kNorm, [&] { in_.rmsnorm_forward(o, r, i, w, N, C, eps); });
  }
  void rmsnorm_backward(float* di, float* dw, const float* d, const float* i, const float* w,
                        const float* r, int N, int C) override {
    timed(OpKind::kNorm, [&] { in_.rmsnorm_backward(di, dw, d, i, w, r, N, C); });
  }
  void rope_forward(float* o, const float* i, const float* c, const float* s, const int32_t* p,
                    int N, int H, int D) override {
    timed(OpKind::kRope, [&] { in_.rope_forward(o, i, c, s, p, N, H, D); });
  }
  void rope_backward(float* di, const float* d, const float* c, const float* s, const int32_t* p,
                     int N, int H, int D) override {
    timed(OpKind::kRope, [&] { in_.rope_backward(di, d, c, s, p, N, H, D); });
  }
  void attention_forward(float* o, float* a, const float* q, const float* k, const float* v, int B,
                         int T, int H, int Hkv, int D) override {
    timed(OpKind::kAttention, [&] { in_.attention_forward(o, a, q, k, v, B, T, H, Hkv, D); });
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* d, const float* a,
                          const float* q, const float* k, const float* v, int B, int T, int H,
                          int Hkv, int D) override {
    timed(OpKind::kAttention,
          [&] { in_.attention_backward(dq, dk, dv, d, a, q, k, v, B, T, H, Hkv, D); });
  }
  void kv_cache_write(float* kc, float* vc, const float* k, const float* v, const int32_t* slot,
                      const int32_t* pos, int rows, int maxT, int Hkv, int D,
                      backend::KvDtype dtype) override {
    // A copy (a narrowing one for a bf16 cache), as it was when it ran through copy().
    timed(OpKind::kMemory,
          [&] { in_.kv_cache_write(kc, vc, k, v, slot, pos, rows, maxT, Hkv, D, dtype); });
  }
  void attention_decode(float* o, const float* q, const float* kc, const float* vc,
                        const int32_t* table, int max_blocks, const int32_t* l, int n,
                        int block_size, int H, int Hkv, int D, backend::KvDtype dtype) override {
    timed(OpKind::kAttention, [&] {
      in_.attention_decode(o, q, kc, vc, table, max_blocks, l, n, block_size, H, Hkv, D, dtype);
    });
  }
  void swiglu_forward(float* o, const float* i, int N, int I) override {
    timed(OpKind::kSwiglu, [&] { in_.swiglu_forward(o, i, N, I); });
  }
  void swiglu_backward(float* di, const float* d, const float* i, int N, int I) override {
    timed(OpKind::kSwiglu, [&] { in_.swiglu_backward(di, d, i, N, I); });
  }
  void add_forward(float* o, const float* a, const float* b, size_t n) override {
    timed(OpKind::kMemory, [&] { in_.add_forward(o, a, b, n); });
  }
  void logprob_forward(float* lp, float* lse, const float* z, const int32_t* t, int N, int V,
                       float s) override {
    timed(OpKind::kLogprob, [&] { in_.logprob_forward(lp, lse, z, t, N, V, s); });
  }
  void logprob_backward(float* dz, const float* d, const float* z, const float* lse,
                        const int32_t* t, int N, int V, float s) override {
    timed(OpKind::kLogprob, [&] { in_.logprob_backward(dz, d, z, lse, t, N, V, s); });
  }
  // Token selection: counted with the LM head's tail.
  void sample_rows(int32_t* ids, float* lps, const float* z, const double* u, int N, int V,
                   const backend::TokenRule& rule, int below) override {
    timed(OpKind::kLogprob, [&] { in_.sample_rows(ids, lps, z, u, N, V, rule, below); });
  }
  double sum_squares(const float* x, size_t n) override {
    double r = 0;
    timed(OpKind::kOptimizer, [&] { r = in_.sum_squares(x, n); });
    return r;
  }
  void adamw_update(float* p, float* m, float* v, const float* g, size_t n, float lr, float b1,
                    float b2, float eps, float wd, float scale, int t) override {
    timed(OpKind::kOptimizer,
          [&] { in_.adamw_update(p, m, v, g, n, lr, b1, b2, eps, wd, scale, t); });
  }

 private:
  template <class F>
  void timed(OpKind k, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    seconds[static_cast<size_t>(k)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  backend::Backend& in_;
};

}  // namespace leap::bench
