// Transformer: construction, initialisation, and the training forward/backward (see
// transformer.h for the API and conventions). Inference (prefill/decode) is in
// transformer_infer.cpp.
#include "model/transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/token_select.h"
#include "common/check.h"
#include "common/rng.h"
#include "model/transformer_activations.h"

namespace leap::model {

Transformer::Transformer(const ModelConfig& cfg, backend::Backend& backend, GradientBuffer gradient,
                         WeightStorage storage)
    : cfg_(cfg), layout_(cfg), be_(&backend), storage_(storage) {
  LEAP_CHECK(cfg.validate("model config").is_ok(), cfg.validate("model config").message());
  params_ = storage == WeightStorage::kBf16Matrices
                ? be_->alloc_weights(layout_.total(), layout_.decay_size())
                : be_->alloc_floats(layout_.total());
  if (gradient == GradientBuffer::kFlat) grads_ = be_->alloc_floats(layout_.total());
}

Transformer::~Transformer() {
  be_->free_floats(params_);
  be_->free_floats(grads_);
  be_->free_floats(own_layer_grads_);
  be_->free_floats(rest_grads_);
  be_->free_floats(rope_cos_);
  be_->free_floats(rope_sin_);
}

void Transformer::init_random(uint64_t seed, float stddev) {
  Rng rng(seed);
  std::vector<float> host(layout_.total());
  for (const auto& t : layout_.tensors()) {
    float* p = host.data() + t.offset;
    const bool is_norm = t.name.find("norm") != std::string::npos;
    const bool is_bias = t.name.ends_with(".bias");
    for (size_t i = 0; i < t.numel; ++i)
      p[i] = is_norm ? 1.0f : is_bias ? 0.0f : static_cast<float>(rng.normal() * stddev);
  }
  be_->upload(params_, host.data(), host.size());
}

void Transformer::zero_grad() {
  if (stream_ != nullptr) {
    stream_->clear();
  } else {
    LEAP_CHECK(grads_ != nullptr, "zero_grad() on a model built without a gradient (GradientBuffer::kNone)");
    be_->zero(grads_, layout_.total());
  }
}

ParameterViews Transformer::grad_views() const {
  LEAP_CHECK(grads_ != nullptr,
             "grad_views() while the gradient streams, or on a model built without a gradient: there is no flat "
             "gradient");
  return layout_.views(grads_);
}

void Transformer::set_gradient_stream(GradientStream* stream) {
  if (stream == stream_) return;
  if (stream_ == nullptr) {  // flat (or none) -> compact
    be_->free_floats(grads_);
    grads_ = nullptr;
    own_layer_grads_ = layer_grads_ = be_->alloc_floats(layout_.layer_floats());  // zero-initialised
    rest_grads_ = be_->alloc_floats(layout_.rest_floats());
  } else if (stream == nullptr) {  // compact -> flat
    be_->free_floats(own_layer_grads_);
    be_->free_floats(rest_grads_);
    own_layer_grads_ = layer_grads_ = rest_grads_ = nullptr;
    grads_ = be_->alloc_floats(layout_.total());
  }
  layer_grads_ = own_layer_grads_;  // another stream's buffer goes with it
  stream_ = stream;
  if (stream_ != nullptr) stream_->attach();
}

void Transformer::backward_nothing() {
  if (stream_ == nullptr) return;
  for (int l = cfg_.num_hidden_layers - 1; l >= 0; --l) layer_grads_ = stream_->layer_done(l, layer_grads_);
  stream_->rest_done(rest_grads_);
}

const float* Transformer::logits() const {
  return acts_ ? acts_->logits : nullptr;
}

void Transformer::ensure_rope_tables(int T) {
  if (T <= rope_len_) return;
  const int half = cfg_.head_dim / 2;
  std::vector<float> cs(static_cast<size_t>(T) * half), sn(cs.size());
  // HF's arithmetic, in fp32: angle = pos * inv_freq (rope_inv_freq: 1 / theta^(2i/D), scaled).
  const std::vector<float> inv = rope_inv_freq(cfg_);
  for (int i = 0; i < half; ++i) {
    const float inv_freq = inv[static_cast<size_t>(i)];
    for (int p = 0; p < T; ++p) {
      float angle = static_cast<float>(p) * inv_freq;
      cs[static_cast<size_t>(p) * half + i] = std::cos(angle);
      sn[static_cast<size_t>(p) * half + i] = std::sin(angle);
    }
  }
  be_->free_floats(rope_cos_);
  be_->free_floats(rope_sin_);
  rope_cos_ = be_->alloc_floats(cs.size());
  rope_sin_ = be_->alloc_floats(sn.size());
  be_->upload(rope_cos_, cs.data(), cs.size());
  be_->upload(rope_sin_, sn.data(), sn.size());
  rope_len_ = T;
}

size_t Transformer::logit_rows(int B, int T) const {
  const size_t N = static_cast<size_t>(B) * T;
  const size_t per_row = static_cast<size_t>(cfg_.vocab_size) * sizeof(float);
  // At least B rows: prefill writes the B prompts' last-position logits at once.
  const size_t rows = std::max<size_t>({logits_chunk_bytes_ / per_row, static_cast<size_t>(B), 1});
  return std::min(N, rows);
}

void Transformer::ensure_activations(int B, int T) {
  const size_t slots = checkpoint_layers_ ? 1 : static_cast<size_t>(cfg_.num_hidden_layers);
  if (acts_ && acts_->B == B && acts_->T == T && acts_->logit_rows == logit_rows(B, T) &&
      acts_->layer_slots == slots)
    return;
  if (!acts_) acts_ = std::make_unique<Activations>(*be_);
  Activations& a = *acts_;
  a.arena.reset();
  a.B = B;
  a.T = T;
  a.layer_slots = slots;
  // Per-layer arrays have one slot per layer, or a single slot that every layer overwrites when
  // checkpointing (the backward recomputes a layer into it from the saved residual stream).
  const size_t N = static_cast<size_t>(B) * T, L = cfg_.num_hidden_layers, C = cfg_.hidden_size,
               S = slots;
  const size_t HD = static_cast<size_t>(cfg_.num_attention_heads) * cfg_.head_dim;
  const size_t KD = static_cast<size_t>(cfg_.num_key_value_heads) * cfg_.head_dim;
  const size_t I = cfg_.intermediate_size, V = cfg_.vocab_size, H = cfg_.num_attention_heads;
  FloatArena& m = a.arena;
  m.take(&a.res, (L + 1) * N * C);
  m.take(&a.ln1, S * N * C);
  m.take(&a.rstd1, S * N);
  m.take(&a.q, S * N * HD);
  m.take(&a.k, S * N * KD);
  if (cfg_.qk_norm) {
    m.take(&a.q_lin, S * N * HD);
    m.take(&a.k_lin, S * N * KD);
    m.take(&a.rstdq, S * N * H);
    m.take(&a.rstdk, S * N * cfg_.num_key_value_heads);
  }
  m.take(&a.v, S * N * KD);
  m.take(&a.att, S * be_->attention_saved_floats(B, T, static_cast<int>(H), cfg_.head_dim));
  m.take(&a.atty, S * N * HD);
  m.take(&a.res_mid, S * N * C);
  m.take(&a.ln2, S * N * C);
  m.take(&a.rstd2, S * N);
  m.take(&a.gu, S * N * 2 * I);
  m.take(&a.hmlp, S * N * I);
  m.take(&a.lnf, N * C);
  m.take(&a.rstdf, N);
  a.logit_rows = logit_rows(B, T);
  m.take(&a.logits, a.logit_rows * V);
  m.take(&a.lse, N);
  m.take(&a.lp, N);
  m.take(&a.tmp, N * C);
  m.take(&a.dres, N * C);
  m.take(&a.dln, N * C);
  m.take(&a.dq, N * HD);
  m.take(&a.dk, N * KD);
  m.take(&a.dv, N * KD);
  m.take(&a.dq_pre, N * HD);
  m.take(&a.dk_pre, N * KD);
  m.take(&a.datty, N * HD);
  m.take(&a.dgu, N * 2 * I);
  m.take(&a.dh, N * I);
  m.take(&a.dlogits, a.logit_rows * V);
  m.take(&a.dlp, N);
  m.allocate();
  a.tokens.resize(N);
  a.targets.resize(N);
  a.pos.resize(N);
}

Transformer::LayerActs Transformer::layer_acts(int l) const {
  const Activations& a = *acts_;
  const size_t N = static_cast<size_t>(a.B) * a.T, C = cfg_.hidden_size, I = cfg_.intermediate_size;
  const size_t HD = static_cast<size_t>(cfg_.num_attention_heads) * cfg_.head_dim;
  const size_t KD = static_cast<size_t>(cfg_.num_key_value_heads) * cfg_.head_dim;
  const size_t s = a.layer_slots == 1 ? 0 : static_cast<size_t>(l);
  LayerActs x;
  x.rin = a.res + static_cast<size_t>(l) * N * C;
  x.rout = a.res + static_cast<size_t>(l + 1) * N * C;
  x.ln1 = a.ln1 + s * N * C;
  x.rstd1 = a.rstd1 + s * N;
  x.q = a.q + s * N * HD;
  x.k = a.k + s * N * KD;
  if (cfg_.qk_norm) {
    const size_t H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads;
    x.q_lin = a.q_lin + s * N * HD;
    x.k_lin = a.k_lin + s * N * KD;
    x.rstdq = a.rstdq + s * N * H;
    x.rstdk = a.rstdk + s * N * Hkv;
  }
  x.v = a.v + s * N * KD;
  x.att = a.att + s * be_->attention_saved_floats(a.B, a.T, cfg_.num_attention_heads, cfg_.head_dim);
  x.atty = a.atty + s * N * HD;
  x.rmid = a.res_mid + s * N * C;
  x.ln2 = a.ln2 + s * N * C;
  x.rstd2 = a.rstd2 + s * N;
  x.gu = a.gu + s * N * 2 * I;
  x.hm = a.hmlp + s * N * I;
  return x;
}

void Transformer::layer_forward(const LayerViews& w, const LayerActs& x, bool write_output) {
  Activations& a = *acts_;
  const int B = a.B, T = a.T, N = B * T;
  const int C = cfg_.hidden_size, I = cfg_.intermediate_size;
  const int H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads, D = cfg_.head_dim;
  const int HD = H * D, KD = Hkv * D;
  const size_t NC = static_cast<size_t>(N) * C;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  be_->rmsnorm_forward(x.ln1, x.rstd1, x.rin, w.ln1, N, C, eps);
  be_->matmul_forward(cfg_.qk_norm ? x.q_lin : x.q, x.ln1, w.qw, w.qb, N, C, HD);
  be_->matmul_forward(cfg_.qk_norm ? x.k_lin : x.k, x.ln1, w.kw, w.kb, N, C, KD);
  if (cfg_.qk_norm) {  // Qwen3: each head's query and key RMS-normalised (rows of D) before RoPE
    be_->rmsnorm_forward(x.q, x.rstdq, x.q_lin, w.qn, N * H, D, eps);
    be_->rmsnorm_forward(x.k, x.rstdk, x.k_lin, w.kn, N * Hkv, D, eps);
  }
  be_->matmul_forward(x.v, x.ln1, w.vw, w.vb, N, C, KD);
  be_->rope_forward(x.q, x.q, rope_cos_, rope_sin_, a.pos.data(), N, H, D);
  be_->rope_forward(x.k, x.k, rope_cos_, rope_sin_, a.pos.data(), N, Hkv, D);
  be_->attention_forward(x.atty, x.att, x.q, x.k, x.v, B, T, H, Hkv, D);
  be_->matmul_forward(a.tmp, x.atty, w.ow, w.ob, N, HD, C);
  be_->add_forward(x.rmid, x.rin, a.tmp, NC);
  be_->rmsnorm_forward(x.ln2, x.rstd2, x.rmid, w.ln2, N, C, eps);
  be_->matmul_forward(x.gu, x.ln2, w.gate_up, nullptr, N, C, 2 * I);
  be_->swiglu_forward(x.hm, x.gu, N, I);
  // A recomputation (checkpointing) stops here: the layer's output is already saved.
  if (!write_output) return;
  be_->matmul_forward(a.tmp, x.hm, w.down, nullptr, N, I, C);
  be_->add_forward(x.rout, x.rmid, a.tmp, NC);
}

RestViews Transformer::forward_blocks(WeightSource& weights, const TokenBatch& batch, const KvSink* on_kv) {
  const int B = batch.B, T = batch.T, N = B * T;
  const int C = cfg_.hidden_size, L = cfg_.num_hidden_layers;
  ensure_activations(B, T);
  ensure_rope_tables(T);
  Activations& a = *acts_;
  a.lengths = batch.lengths;
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const size_t n = static_cast<size_t>(b) * T + t;
      const bool real = t < batch.lengths[b];
      a.tokens[n] = real ? batch.tokens[n] : 0;  // padding reads row 0; it never reaches a loss
      a.targets[n] = t + 1 < batch.lengths[b] ? batch.tokens[n + 1] : -1;
      a.pos[n] = t;
    }
  }
  const size_t NC = static_cast<size_t>(N) * C;
  be_->embedding_forward(a.res, a.tokens.data(), weights.embedding(), N, C);
  for (int l = 0; l < L; ++l) {
    const LayerActs x = layer_acts(l);
    layer_forward(weights.layer(l), x, true);
    if (on_kv) (*on_kv)(l, x.k, x.v);
  }
  const RestViews head = weights.head();
  be_->rmsnorm_forward(a.lnf, a.rstdf, a.res + L * NC, head.lnf, N, C,
                       static_cast<float>(cfg_.rms_norm_eps));
  return head;
}

void Transformer::set_logprob_temperature(double t) {
  // The sampler records with this same float.
  const float scale = backend::logprob_inv_temperature({.temperature = t});
  LEAP_CHECK(t > 0 && std::isfinite(scale), "log-prob temperature must be > 0 with a finite "
                                            "1/T, got " << t);
  logprob_temperature_ = t;
  logit_scale_ = scale;
}

Status Transformer::forward(const TokenBatch& batch, float* logprobs) {
  FlatWeights own(layout_, params_);
  return forward_with(own, batch, logprobs);
}

Status Transformer::forward_with(WeightSource& weights, const TokenBatch& batch, float* logprobs) {
  LEAP_RETURN_IF_ERROR(batch.validate(cfg_.vocab_size));
  if (batch.T > cfg_.max_position_embeddings)
    return invalid_input(fmt::format("sequence length {} exceeds max_position_embeddings {}",
                                     batch.T, cfg_.max_position_embeddings));
  const RestViews head = forward_blocks(weights, batch);
  Activations& a = *acts_;
  const int N = batch.B * batch.T, C = cfg_.hidden_size, V = cfg_.vocab_size;
  // The LM head and log-softmax a chunk of rows at a time, so that no (N, V) buffer exists.
  for (int r0 = 0; r0 < N; r0 += static_cast<int>(a.logit_rows)) {
    const int n = std::min(N - r0, static_cast<int>(a.logit_rows));
    be_->matmul_forward(a.logits, a.lnf + static_cast<size_t>(r0) * C, head.lm_head, nullptr, n,
                        C, V);
    be_->logprob_forward(a.lp + r0, a.lse + r0, a.logits, a.targets.data() + r0, n, V,
                         logit_scale_);
  }
  a.logit_scale = logit_scale_;
  // Row t predicts token t+1: shift by one into the caller's token-aligned convention.
  std::vector<float> lp(static_cast<size_t>(N));
  be_->download(lp.data(), a.lp, lp.size());
  for (int b = 0; b < batch.B; ++b) {
    float* out = logprobs + static_cast<size_t>(b) * batch.T;
    const float* row = lp.data() + static_cast<size_t>(b) * batch.T;
    out[0] = 0.0f;
    for (int t = 1; t < batch.T; ++t) out[t] = t < batch.lengths[b] ? row[t - 1] : 0.0f;
  }
  return Status::ok();
}

void Transformer::backward(const float* dlogprobs) {
  LEAP_CHECK(acts_ != nullptr, "backward() without a forward()");
  Activations& a = *acts_;
  const int B = a.B, T = a.T, N = B * T;
  const int C = cfg_.hidden_size, I = cfg_.intermediate_size, L = cfg_.num_hidden_layers,
            V = cfg_.vocab_size;
  const int H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads, D = cfg_.head_dim;
  const int HD = H * D, KD = Hkv * D;
  const size_t NC = static_cast<size_t>(N) * C;
  std::vector<float> dlp(static_cast<size_t>(N), 0.0f);
  for (int b = 0; b < B; ++b)
    for (int t = 1; t < a.lengths[b]; ++t)
      dlp[static_cast<size_t>(b) * T + t - 1] = dlogprobs[static_cast<size_t>(b) * T + t];
  be_->upload(a.dlp, dlp.data(), dlp.size());

  const ParameterViews w = param_views();
  // Where the gradients go: the flat buffer, or the stream's compact buffers (gradient_stream.h).
  const RestViews g = stream_ ? layout_.compact_rest_views(rest_grads_) : layout_.rest_views(grads_);
  const ParameterViews flat_g = stream_ ? ParameterViews{} : grad_views();
  be_->zero(a.dln, NC);
  // Chunk by chunk, as the forward went. With one chunk its logits are still in place; with
  // several, each chunk's logits are computed again (one more LM-head GEMM) from the saved
  // final-norm output and logsumexp.
  const bool kept = a.logit_rows >= static_cast<size_t>(N);
  for (int r0 = 0; r0 < N; r0 += static_cast<int>(a.logit_rows)) {
    const int n = std::min(N - r0, static_cast<int>(a.logit_rows));
    const float* lnf = a.lnf + static_cast<size_t>(r0) * C;
    if (!kept) be_->matmul_forward(a.logits, lnf, w.lm_head, nullptr, n, C, V);
    be_->zero(a.dlogits, static_cast<size_t>(n) * V);
    be_->logprob_backward(a.dlogits, a.dlp + r0, a.logits, a.lse + r0, a.targets.data() + r0, n,
                          V, a.logit_scale);
    be_->matmul_backward(a.dln + static_cast<size_t>(r0) * C, g.lm_head, nullptr, a.dlogits, lnf,
                         w.lm_head, n, C, V);
  }
  be_->zero(a.dres, NC);
  be_->rmsnorm_backward(a.dres, g.lnf, a.dln, a.res + L * NC, w.lnf, a.rstdf, N, C);
  for (int l = L - 1; l >= 0; --l) {
    const LayerActs x = layer_acts(l);
    const LayerViews wl = layout_.layer_views(w, l);
    const LayerViews gl = stream_ ? layout_.compact_layer_views(layer_grads_) : layout_.layer_views(flat_g, l);
    // Checkpointing: layer l's activations again, from its saved input (the last layer's are
    // still in the slot from the forward).
    if (a.layer_slots == 1 && l != L - 1) layer_forward(wl, x, false);
    const float *rin = x.rin, *ln1 = x.ln1, *q = x.q, *k = x.k, *v = x.v, *atty = x.atty,
                *rmid = x.rmid, *ln2 = x.ln2, *gu = x.gu, *hm = x.hm;
    // MLP branch: dres holds dL/d(layer output) = dL/d(res_mid) through the skip connection.
    be_->zero(a.dh, static_cast<size_t>(N) * I);
    be_->matmul_backward(a.dh, gl.down, nullptr, a.dres, hm, wl.down, N, I, C);
    be_->zero(a.dgu, static_cast<size_t>(N) * 2 * I);
    be_->swiglu_backward(a.dgu, a.dh, gu, N, I);
    be_->zero(a.dln, NC);
    be_->matmul_backward(a.dln, gl.gate_up, nullptr, a.dgu, ln2, wl.gate_up, N, C, 2 * I);
    be_->rmsnorm_backward(a.dres, gl.ln2, a.dln, rmid, wl.ln2, x.rstd2, N, C);
    // Attention branch: dres is now dL/d(res_mid) = dL/d(layer input) through the skip.
    be_->zero(a.datty, static_cast<size_t>(N) * HD);
    be_->matmul_backward(a.datty, gl.ow, gl.ob, a.dres, atty, wl.ow, N, HD, C);
    be_->zero(a.dq, static_cast<size_t>(N) * HD);
    be_->zero(a.dk, static_cast<size_t>(N) * KD);
    be_->zero(a.dv, static_cast<size_t>(N) * KD);
    be_->attention_backward(a.dq, a.dk, a.dv, a.datty, x.att, q, k, v, B, T, H, Hkv, D);
    be_->zero(a.dq_pre, static_cast<size_t>(N) * HD);
    be_->zero(a.dk_pre, static_cast<size_t>(N) * KD);
    be_->rope_backward(a.dq_pre, a.dq, rope_cos_, rope_sin_, a.pos.data(), N, H, D);
    be_->rope_backward(a.dk_pre, a.dk, rope_cos_, rope_sin_, a.pos.data(), N, Hkv, D);
    // The projections' output gradient: before RoPE, or with qwen3's q/k norms before those
    // (into dq and dk, whose values the RoPE backward has consumed).
    const float *dq_lin = a.dq_pre, *dk_lin = a.dk_pre;
    if (cfg_.qk_norm) {
      be_->zero(a.dq, static_cast<size_t>(N) * HD);
      be_->zero(a.dk, static_cast<size_t>(N) * KD);
      be_->rmsnorm_backward(a.dq, gl.qn, a.dq_pre, x.q_lin, wl.qn, x.rstdq, N * H, D);
      be_->rmsnorm_backward(a.dk, gl.kn, a.dk_pre, x.k_lin, wl.kn, x.rstdk, N * Hkv, D);
      dq_lin = a.dq;
      dk_lin = a.dk;
    }
    be_->zero(a.dln, NC);
    be_->matmul_backward(a.dln, gl.qw, gl.qb, dq_lin, ln1, wl.qw, N, C, HD);
    be_->matmul_backward(a.dln, gl.kw, gl.kb, dk_lin, ln1, wl.kw, N, C, KD);
    be_->matmul_backward(a.dln, gl.vw, gl.vb, a.dv, ln1, wl.vw, N, C, KD);
    be_->rmsnorm_backward(a.dres, gl.ln1, a.dln, rin, wl.ln1, x.rstd1, N, C);
    if (stream_) layer_grads_ = stream_->layer_done(l, layer_grads_);
    if (layer_grads_done_) layer_grads_done_(l);
  }
  be_->embedding_backward(g.wte, a.dres, a.tokens.data(), N, C);
  if (stream_) stream_->rest_done(rest_grads_);
}

Expected<float> Transformer::sft_step(const TokenBatch& batch, const float* mask,
                                      float normaliser) {
  if (!(normaliser > 0)) return invalid_input("SFT normaliser must be > 0");
  std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), dlp(lp.size(), 0.0f);
  // The model's own distribution, also on a policy whose RL log-probs are tempered (the SFT
  // mode builds the same replica as RL, which sets sampler.temperature).
  const float rl_scale = logit_scale_;
  logit_scale_ = 1.0f;
  const Status st = forward(batch, lp.data());
  logit_scale_ = rl_scale;
  LEAP_RETURN_IF_ERROR(st);
  double loss = 0.0;
  for (int b = 0; b < batch.B; ++b) {
    for (int t = 1; t < batch.lengths[b]; ++t) {
      const size_t i = static_cast<size_t>(b) * batch.T + t;
      loss -= static_cast<double>(mask[i]) * lp[i];
      dlp[i] = -mask[i] / normaliser;
    }
  }
  backward(dlp.data());
  return static_cast<float>(loss / normaliser);
}

}  // namespace leap::model
