// The op interface of the policy transformer: one forward and one backward per op, with the same
// explicit signature on every backend (the CPU reference here, the CUDA backend later).
//
// Conventions every implementation keeps:
// - Argument order: outputs, saved activations, inputs, weights, dimensions (llm.c's order).
// - Float pointers are memory the backend owns (alloc_floats); on the CPU that is host memory.
//   Integer arrays (tokens, targets, positions, cache slots and lengths) are small and passed
//   in host memory; a device backend stages them itself.
// - Row-major layouts. N = number of token rows (B*T), C = model width, H/Hkv query/KV heads,
//   D = head dimension, V = vocabulary, I = MLP width.
// - GRADIENT CONVENTION: every backward ACCUMULATES (+=) into each gradient it writes, parameter
//   gradients and activation gradients alike. Callers zero gradient buffers once (per step for
//   parameters, per use for activations). That makes micro-batch accumulation and residual
//   branches free of special cases.
// - Results are deterministic: the same inputs and thread count give bit-identical outputs.
// - Ops used only for inference (decode attention against the KV cache) have no backward.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/token_select.h"

namespace leap::backend {

// Storage of the sampler's KV cache (sampler.kv_cache_dtype). bf16 halves the cache; keys and
// values are rounded once, when written, and widened to fp32 for the attention arithmetic.
enum class KvDtype { kF32, kBf16 };
inline size_t kv_dtype_bytes(KvDtype d) { return d == KvDtype::kBf16 ? 2 : 4; }
inline const char* kv_dtype_name(KvDtype d) { return d == KvDtype::kBf16 ? "bf16" : "fp32"; }

// One thread uses a backend at a time (its caches and the CUDA backend's stream are not
// synchronised): a thread that takes over calls bind_calling_thread() first.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // True when the float* buffers are host memory (the CPU backend), so callers may read them
  // directly; otherwise they go through download().
  virtual bool host_memory() const { return true; }
  // Another thread is about to compute with this backend: OpenMP's thread count (CPU) and the
  // current CUDA device are per thread, so such a thread calls this first.
  virtual void bind_calling_thread() {}
  // [p, p + n) of backend memory was written by something other than this backend's ops (a
  // collective library such as NCCL): drop whatever the backend derived from it (the CUDA
  // backend's bf16 compute copies of weights). The CPU derives nothing.
  virtual void external_write(const float* p, size_t n) {
    (void)p;
    (void)n;
  }

  // ---- memory -------------------------------------------------------------------------------
  // Zero-initialised buffer of n floats (64-byte aligned). free_floats(nullptr) is a no-op.
  virtual float* alloc_floats(size_t n) = 0;
  virtual void free_floats(float* p) = 0;
  virtual void zero(float* p, size_t n) = 0;
  // Within backend memory; [dst, dst + n) and [src, src + n) must not overlap.
  virtual void copy(float* dst, const float* src, size_t n) = 0;
  virtual void upload(float* dst, const float* host, size_t n) = 0;
  virtual void download(float* host, const float* src, size_t n) = 0;
  // Weights kept in bf16 (a frozen KL reference): dst holds n bf16 values, src's n fp32 values
  // rounded to nearest even; and back, n bf16 values widened exactly into n fp32 floats. A bf16
  // buffer of n values (n even) is n / 2 floats of backend memory, as the bf16 KV cache is.
  virtual void round_to_bf16(float* dst, const float* src, size_t n) = 0;
  virtual void widen_from_bf16(float* dst, const float* src, size_t n) = 0;

  // ---- a model's weights with bf16 matrices (optim.master_weights = optimizer) --------------
  // A buffer of n floats (freed with free_floats) whose first `bf16_floats` hold bf16 values
  // only: every write into that part (zero, copy, upload, adamw_update) rounds what it writes to
  // nearest even; reads see the rounded values. The fp32 masters then live in the optimizer. The
  // CUDA backend stores that part as bf16 alone, which is what its GEMMs read (the compute
  // copies become the only copy: half the bytes, no fp32 replica); the CPU keeps fp32 floats
  // holding bf16 values, so it computes with the same weights and checks the logic.
  virtual float* alloc_weights(size_t n, size_t bf16_floats) = 0;

  // ---- matmul: out (N, OC) = inp (N, IC) @ weight (OC, IC)^T + bias (OC); bias may be null ---
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                              int N, int IC, int OC) = 0;
  // dinp (N, IC) += dout @ weight; dweight (OC, IC) += dout^T @ inp; dbias (OC) += sum_n dout.
  // dinp or dbias may be null (not needed).
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int N, int IC, int OC) = 0;

  // ---- embedding: out (N, C) = wte[tokens[n]]; tokens are checked by the caller -------------
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* wte, int N,
                                 int C) = 0;
  virtual void embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int N,
                                  int C) = 0;

  // ---- RMSNorm (HF Llama): out = inp * rsqrt(mean(inp^2) + eps) * weight; rstd (N) saved ----
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               int N, int C, float eps) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int N, int C) = 0;

  // ---- RoPE, rotate-half convention (HF): x (N, H, D); cos/sin tables (maxT, D/2) ------------
  // Row n is at position pos[n]. out may alias inp.
  virtual void rope_forward(float* out, const float* inp, const float* cos_table,
                            const float* sin_table, const int32_t* pos, int N, int H, int D) = 0;
  virtual void rope_backward(float* dinp, const float* dout, const float* cos_table,
                             const float* sin_table, const int32_t* pos, int N, int H, int D) = 0;

  // ---- causal grouped-query attention over full sequences (training and prefill) -------------
  // q (B, T, H, D), k and v (B, T, Hkv, D), out (B, T, H, D); att keeps what the backward
  // needs: on the CPU, the softmax probabilities (B, H, T, T) (the upper triangle is zero).
  // Query head h reads KV head h / (H / Hkv). Scores are scaled by 1/sqrt(D).
  // Floats attention_forward saves in `att` for one layer: the probabilities (B, H, T, T) here;
  // a backend that recomputes them in the backward saves less (CUDA: the per-row logsumexp
  // (B, H, T) and a copy of out (B, T, H, D)).
  virtual size_t attention_saved_floats(int B, int T, int H, int D) const {
    (void)D;
    return static_cast<size_t>(B) * H * T * T;
  }
  virtual void attention_forward(float* out, float* att, const float* q, const float* k,
                                 const float* v, int B, int T, int H, int Hkv, int D) = 0;
  virtual void attention_backward(float* dq, float* dk, float* dv, const float* dout,
                                  const float* att, const float* q, const float* k, const float* v,
                                  int B, int T, int H, int Hkv, int D) = 0;
  // KV-cache append: row r of k and v (rows, Hkv*D) goes to position pos[r] of cache slot
  // slot[r] in k_cache and v_cache (slots, maxT, Hkv, D), stored as `dtype` (bf16: rounded to
  // nearest even). A paged cache passes block and offset as slot and pos, the block size as maxT.
  // The caches are float* whatever their dtype: a bf16 cache of E elements is E / 2 floats of
  // backend memory, and offsets into it are counted in its own elements.
  virtual void kv_cache_write(float* k_cache, float* v_cache, const float* k, const float* v,
                              const int32_t* slot, const int32_t* pos, int rows, int maxT,
                              int Hkv, int D, KvDtype dtype) = 0;
  // Decode attention against a paged KV cache of `dtype`: q (n, H, D), out (n, H, D), fp32
  // arithmetic. The caches are (blocks, block_size, Hkv, D); position j < len[r] of row r (its
  // own token included) lives in block block_table[r * max_blocks + j / block_size], at offset
  // j % block_size. A contiguous cache of sequences of maxT positions is the case block_size =
  // maxT, max_blocks = 1 and block_table = the rows' slots. Inference only: no backward.
  virtual void attention_decode(float* out, const float* q, const float* k_cache,
                                const float* v_cache, const int32_t* block_table, int max_blocks,
                                const int32_t* len, int n, int block_size, int H, int Hkv, int D,
                                KvDtype dtype) = 0;

  // ---- SwiGLU: out (N, I) = silu(inp[:, :I]) * inp[:, I:]; inp (N, 2I) is [gate | up] --------
  virtual void swiglu_forward(float* out, const float* inp, int N, int I) = 0;
  virtual void swiglu_backward(float* dinp, const float* dout, const float* inp, int N, int I) = 0;

  // ---- residual: out (n) = a + b ---------------------------------------------------------------
  virtual void add_forward(float* out, const float* a, const float* b, size_t n) = 0;

  // ---- LM head tail: fused log-softmax and gather ----------------------------------------------
  // logits (N, V), read as z = s * logits with s = inv_temp (1 / the sampling temperature; 1:
  // the model's own distribution, and then bit for bit what no scaling gives). For rows with
  // targets[n] >= 0: logprobs[n] = z[n, t] - lse[n], where lse[n] = logsumexp(z[n, :]); rows
  // with targets[n] < 0 get logprobs[n] = 0.
  virtual void logprob_forward(float* logprobs, float* lse, const float* logits,
                               const int32_t* targets, int N, int V, float inv_temp) = 0;
  // dlogits[n, v] += s * dlogprobs[n] * (1[v == t] - softmax(z[n])[v]) for rows with t >= 0,
  // with lse from logprob_forward at the same s.
  virtual void logprob_backward(float* dlogits, const float* dlogprobs, const float* logits,
                                const float* lse, const int32_t* targets, int N, int V,
                                float inv_temp) = 0;
  // Cross-entropy is -sum(mask * logprobs) / normaliser; its gradient wrt logprobs is
  // -mask / normaliser, fed to logprob_backward (see model/transformer.h).

  // ---- token selection -------------------------------------------------------------------------
  // One token per row of logits (N, V) by token_select.h's rule, among ids below sample_below
  // (0: all): ids and logprobs are host arrays of N, uniforms[n] row n's draw in [0, 1). A device
  // backend runs the rule where the logits are and downloads only the 2N results; this default
  // reads host memory.
  virtual void sample_rows(int32_t* ids, float* logprobs, const float* logits,
                           const double* uniforms, int N, int V, const TokenRule& rule,
                           int sample_below) {
    for (int r = 0; r < N; ++r)
      ids[r] = select_token(logits + static_cast<size_t>(r) * static_cast<size_t>(V), V, rule,
                            uniforms[r], logprobs + r, sample_below);
  }

  // ---- optimizer
  // --------------------------------------------------------------------------------- Sum of
  // squares of n gradient entries, accumulated in double (for global-norm clipping).
  virtual double sum_squares(const float* x, size_t n) = 0;
  // AdamW with decoupled weight decay (Loshchilov & Hutter; PyTorch's torch.optim.AdamW):
  //   g = grad * grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  //   param -= lr * (weight_decay * param + (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)).
  // t is the 1-based step count.
  virtual void adamw_update(float* params, float* m, float* v, const float* grads, size_t n,
                            float lr, float beta1, float beta2, float eps, float weight_decay,
                            float grad_scale, int t) = 0;
};

}  // namespace leap::backend
