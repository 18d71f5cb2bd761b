// The policy transformer (Llama/Qwen2 decoder) on a Backend: the API the RL trainer calls.
//
//   backend::CpuBackend be(threads);
//   auto model = load_model(dir, be);                // checkpoint.h; or Transformer(cfg, be)
//   AdamW opt(optim_cfg, *model);                    // optimizer.h
//   model->zero_grad();                              // once per optimizer step
//   for each micro-batch:                            // forward and backward in pairs
//     model->forward(batch, logprobs);               // (1) per-token log-probs, activations kept
//     dlogprobs = d(loss)/d(logprobs) per token;     // e.g. GRPO: -A*ratio*mask/global_norm
//     model->backward(dlogprobs);                    // (2) grads += into the flat gradient
//   MPI_Allreduce(SUM) over model->grads(), model->num_params() floats;
//   opt.step();                                      // (4) clip, schedule, AdamW
//   Sampler(*model, &tokenizer).generate(prompts, sampler_cfg, rng);  // (5) sampler.h
//
// Log-prob convention: logprobs has the batch's shape (B, T). Entry [b, t] for 1 <= t < len_b
// is log p(tokens[b, t] | tokens[b, 0..t-1]); entries t = 0 and t >= len_b are 0. A loss mask
// over token positions (prompt 0, completion 1) therefore lines up with logprobs directly, and
// so do the sampler's recorded log-probs of completion tokens.
// Gradient convention: backward ADDS into grads() (see backend/backend.h), or hands each layer's
// gradient to a GradientStream (ZeRO stage 2); zero_grad() clears.
// Activations of the last forward() are kept until the next forward(); backward() uses them.
// Buffers are reused across batch shapes (grown when needed). Not thread-safe: one model per
// thread; the backend's own threads parallelise each op.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/gradient_stream.h"
#include "model/kv_cache.h"
#include "common/status.h"
#include "model/model_config.h"
#include "model/parameters.h"
#include "model/token_batch.h"
#include "model/weight_source.h"

namespace leap::model {

// What a Transformer keeps for its gradient. kFlat: one buffer of every parameter's (training
// with replicas or ZeRO stage 1). kNone: none, so a model that is only sampled (leap eval) holds no
// gradient, and one whose gradient streams into ZeRO stage 2's shards never holds the whole of it,
// not even between its construction and set_gradient_stream() (at 7B, 28 GiB of fp32).
enum class GradientBuffer { kFlat, kNone };

// How a Transformer stores its weights. kFp32: one fp32 buffer, which is also the optimizer's
// master copy. kBf16Matrices: the matrices (the layout's decay prefix) hold bf16 values only,
// the norms and biases fp32 (Backend::alloc_weights: on CUDA the bf16 GEMM copies are the only
// copy of the matrices); the fp32 master weights live in the optimizer (AdamW::masters(), sharded
// with ZeRO: optim.master_weights = optimizer).
enum class WeightStorage { kFp32, kBf16Matrices };

class Transformer {
 public:
  Transformer(const ModelConfig& cfg, backend::Backend& backend,
              GradientBuffer gradient = GradientBuffer::kFlat,
              WeightStorage storage = WeightStorage::kFp32);
  ~Transformer();
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  const ModelConfig& config() const { return cfg_; }
  const ParameterLayout& layout() const { return layout_; }
  backend::Backend& backend() const { return *be_; }

  // The flat buffers (backend memory, host memory on the CPU), layout() floats each. grads() is
  // null while a gradient stream is set, and in a model built with GradientBuffer::kNone.
  float* params() { return params_; }
  const float* params() const { return params_; }
  float* grads() { return grads_; }
  size_t num_params() const { return layout_.total(); }
  WeightStorage weight_storage() const { return storage_; }
  ParameterViews param_views() const { return layout_.views(params_); }
  ParameterViews grad_views() const;  // of grads(); not while a gradient stream is set

  // HF's initialisation: normal(0, stddev) matrices and embeddings, ones for norms, zero biases.
  void init_random(uint64_t seed, float stddev = 0.02f);
  // Clears the gradient for a new optimizer step (with a stream: stream->clear()).
  void zero_grad();

  // Hands the gradient to `stream` layer by layer instead of keeping it whole (see
  // gradient_stream.h): frees the flat gradient buffer and allocates the two compact ones
  // (layout().layer_floats() + rest_floats()). Null goes back to the flat buffer. The stream
  // must outlive its use.
  void set_gradient_stream(GradientStream* stream);
  GradientStream* gradient_stream() const { return stream_; }
  // With a stream: hands it every layer's and the rest's (all-zero) buffers in backward()'s
  // order, as a backward over no tokens would. A rank with fewer micro-batches than the others
  // calls it for each one it lacks, so that every rank makes the same collectives. Without a
  // stream: nothing.
  void backward_nothing();

  // (1) Forward over a right-padded batch. Writes logprobs (B*T floats, host memory; see the
  // convention above) and keeps the activations for backward(). invalid_input for token ids out
  // of range or sequences longer than max_position_embeddings.
  Status forward(const TokenBatch& batch, float* logprobs);
  // forward() over other weights of the same layout, read piece by piece from `weights`
  // (weight_source.h), e.g. a frozen KL reference: no second model, so no second set of
  // activations or gradients. It overwrites the activations, so a backward() needs a forward()
  // after it.
  Status forward_with(WeightSource& weights, const TokenBatch& batch, float* logprobs);
  // (2) Backward of the last forward from dL/dlogprobs (B*T host floats, same convention).
  // Entries at t = 0 and t >= len_b are ignored. Adds into grads() (or streams; see above).
  void backward(const float* dlogprobs);
  // Called by backward() once layer l's parameter gradients are complete (layers finish from
  // L-1 down to 0; the embedding and final norm only when backward() returns), so that a
  // gradient reduction can start on them while the rest of the backward runs. Empty: none.
  void set_layer_grads_done(std::function<void(int layer)> fn) {
    layer_grads_done_ = std::move(fn);
  }
  // (3) SFT cross-entropy, at temperature 1: loss = -sum(mask * logprobs) / normaliser
  // (normaliser > 0; pass the global token count so micro-batches and ranks sum to the mean).
  // Runs forward and backward, returns the loss. mask (B*T) follows the log-prob convention (mask[b, 0] is ignored).
  Expected<float> sft_step(const TokenBatch& batch, const float* mask, float normaliser);

  // The LM head runs over chunks of rows whose logits take at most this many bytes (at least
  // one row, and B rows for a prefill), so that no (N, V) logits or gradient buffer exists.
  // Default 256 MiB: one chunk for small vocabularies, ~440 rows of Qwen2.5's 152k.
  void set_logits_chunk_bytes(size_t bytes) { logits_chunk_bytes_ = bytes; }
  size_t logits_chunk_bytes() const { return logits_chunk_bytes_; }
  // Rows of one LM-head chunk for a (B, T) batch (all N rows when they fit one chunk).
  size_t logit_rows(int B, int T) const;

  // The temperature T of forward()'s log-probabilities (and so of backward()'s):
  // log softmax(logits / T). 1 (the default) is the model's own distribution (`leap score`).
  // The RL trainer sets sampler.temperature, so that its log-probs, the reference's and the
  // sampler's recorded ones are of the distribution the tokens were drawn from (as veRL and
  // TRL do); backward() differentiates that distribution. sft_step() is at 1 whatever this says.
  // T > 0, with 1/T a finite float.
  void set_logprob_temperature(double t);
  double logprob_temperature() const { return logprob_temperature_; }

  // Per-layer activation checkpointing: the forward keeps only each layer's input (the residual
  // stream) and one layer's activations; the backward computes each layer's again before its
  // backward (one more forward of the blocks). Gradients are bit-identical either way.
  void set_activation_checkpointing(bool on) { checkpoint_layers_ = on; }
  bool activation_checkpointing() const { return checkpoint_layers_; }

  // Logits of the last forward(), in backend memory: all N = B*T rows of V when they fit one
  // chunk (logit_rows == N), else only the last chunk's.
  const float* logits() const;

  // ---- inference over a KV cache (the sampler's engine) -------------------------------------
  // Prefill: runs the prompts (a right-padded batch, B <= cache slots) into cache slots
  // slots[0..B-1] (null: 0..B-1), sets their lengths, and writes each prompt's next-token logits
  // to last_logits (B*V host floats).
  Status prefill(const TokenBatch& prompts, KvCache& cache, float* last_logits, const int32_t* slots = nullptr);
  // Decode: one token per row r, appended to cache slot slots[r] at position cache.len[slot];
  // writes next-token logits (n*V host floats). The caller checks capacity (len < maxT).
  // logits may be null: then they stay in the backend and nothing waits for the device (the
  // GPU check times the device side of a step this way, apart from the download).
  void decode(const int32_t* tokens, const int32_t* slots, int n, KvCache& cache, float* logits);
  // The same, with the logits written to `out` in backend memory (n*V floats), where
  // Backend::sample_rows picks the tokens without a download.
  void decode_into(const int32_t* tokens, const int32_t* slots, int n, KvCache& cache, float* out);
  // Extend: appends tokens[i] (non-empty) to cache slot slots[i] after its len positions (a
  // later turn whose conversation the slot already holds) and writes each one's next-token
  // logits to last_logits (n*V host floats). The new tokens attend through the cache, in chunks
  // of cache.slots + kKvExtendRows rows; the log-probs equal a full prefill's up to float rounding.
  void extend(const std::vector<std::vector<int32_t>>& tokens, const int32_t* slots,
              KvCache& cache, float* last_logits);

 private:
  struct Activations;
  // One layer's activations (its slot of the per-layer arrays) and its input and output rows of
  // the residual stream.
  struct LayerActs {
    float *rin, *rout, *ln1, *rstd1, *q, *k, *v, *att, *atty, *rmid, *ln2, *rstd2, *gu, *hm;
    // qwen3's q/k norms: their inputs and rstd (null for other models)
    float *q_lin = nullptr, *k_lin = nullptr, *rstdq = nullptr, *rstdk = nullptr;
  };
  // Called after each layer of a forward with the layer's keys (after RoPE) and values, (N, KD).
  using KvSink = std::function<void(int layer, const float* k, const float* v)>;
  void ensure_activations(int B, int T);
  void ensure_rope_tables(int T);
  // Embedding .. final norm into the activations, over `weights`; returns the head it used (the
  // final norm and the LM head, valid until `weights` is asked again).
  RestViews forward_blocks(WeightSource& weights, const TokenBatch& batch,
                           const KvSink* on_kv = nullptr);
  LayerActs layer_acts(int l) const;
  // A layer over weights w from x.rin; writes x.rout unless recomputing for the backward.
  void layer_forward(const LayerViews& w, const LayerActs& x, bool write_output);
  // n rows (token, slot, position) through every layer against the cache, each layer's keys and
  // values written before its attention; leaves the final norm's rows in the scratch's `ln`.
  void forward_cached(const int32_t* tokens, const int32_t* slots, const int32_t* pos, int n,
                      KvCache& cache);

  ModelConfig cfg_;
  ParameterLayout layout_;
  backend::Backend* be_;
  WeightStorage storage_ = WeightStorage::kFp32;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  GradientStream* stream_ = nullptr;
  float* own_layer_grads_ = nullptr;  // with a stream: the layer buffer this model allocated
  float* layer_grads_ = nullptr;      // the one the next layer's backward writes (the stream's choice)
  float* rest_grads_ = nullptr;   // with a stream: embedding, LM head, final norm, compact
  float* rope_cos_ = nullptr;  // (rope_len_, D/2)
  float* rope_sin_ = nullptr;
  int rope_len_ = 0;
  std::unique_ptr<Activations> acts_;
  std::function<void(int layer)> layer_grads_done_;
  size_t logits_chunk_bytes_ = size_t{256} << 20;
  double logprob_temperature_ = 1.0;
  float logit_scale_ = 1.0f;  // 1 / logprob_temperature_
  bool checkpoint_layers_ = false;
};

}  // namespace leap::model
