// Transformer inference over a KV cache: prefill (full prompts, reusing the training forward)
// and single-token decode. The decode path runs the same ops as training on n rows, with
// attention_decode reading each row's slot of the cache; its log-probs equal the full
// forward's up to float rounding (tests/model checks this).
#include <fmt/format.h>

#include "common/check.h"
#include "model/transformer.h"
#include "model/transformer_activations.h"

namespace leap::model {
namespace {

// Decode activations for up to `rows` rows, carved from KvCache::scratch.
struct DecodeBuffers {
  float *x, *ln, *rstd, *q, *k, *v, *atty, *tmp, *gu, *h, *logits;
};

size_t decode_floats(const ModelConfig& c, int rows) {
  const size_t HD = static_cast<size_t>(c.num_attention_heads) * c.head_dim;
  const size_t KD = static_cast<size_t>(c.num_key_value_heads) * c.head_dim;
  const size_t per_row = 3 * static_cast<size_t>(c.hidden_size) + 1 + 2 * HD + 2 * KD +
                         3 * c.intermediate_size + c.vocab_size;
  return per_row * rows;
}

DecodeBuffers carve(const ModelConfig& c, float* base, int rows) {
  const size_t R = rows, C = c.hidden_size, I = c.intermediate_size;
  const size_t HD = static_cast<size_t>(c.num_attention_heads) * c.head_dim;
  const size_t KD = static_cast<size_t>(c.num_key_value_heads) * c.head_dim;
  DecodeBuffers d;
  float* p = base;
  auto next = [&](size_t n) {
    float* r = p;
    p += n;
    return r;
  };
  d.x = next(R * C);
  d.ln = next(R * C);
  d.tmp = next(R * C);
  d.rstd = next(R);
  d.q = next(R * HD);
  d.atty = next(R * HD);
  d.k = next(R * KD);
  d.v = next(R * KD);
  d.gu = next(R * 2 * I);
  d.h = next(R * I);
  d.logits = next(R * c.vocab_size);
  return d;
}

}  // namespace

KvCache::KvCache(const ModelConfig& cfg, backend::Backend& backend, int slots_, int maxT_)
    : be(&backend),
      slots(slots_),
      maxT(maxT_),
      L(cfg.num_hidden_layers),
      Hkv(cfg.num_key_value_heads),
      D(cfg.head_dim),
      len(static_cast<size_t>(slots_), 0) {
  k = be->alloc_floats(layer_stride() * L);
  v = be->alloc_floats(layer_stride() * L);
  scratch = be->alloc_floats(decode_floats(cfg, slots_));
}

void KvCache::copy_slot(int from, int to, int positions) {
  LEAP_CHECK(from >= 0 && from < slots && to >= 0 && to < slots);
  if (positions < 0) positions = len[from];
  LEAP_CHECK(positions <= len[from], "copying " << positions << " positions of a slot holding " << len[from]);
  if (from == to) return;
  const size_t per_pos = static_cast<size_t>(Hkv) * D, n = static_cast<size_t>(positions) * per_pos;
  for (int l = 0; l < L; ++l) {
    const size_t base = l * layer_stride();
    be->copy(k + base + static_cast<size_t>(to) * maxT * per_pos, k + base + static_cast<size_t>(from) * maxT * per_pos, n);
    be->copy(v + base + static_cast<size_t>(to) * maxT * per_pos, v + base + static_cast<size_t>(from) * maxT * per_pos, n);
  }
  len[to] = positions;
}

KvCache::~KvCache() {
  be->free_floats(k);
  be->free_floats(v);
  be->free_floats(scratch);
}

Status Transformer::prefill(const TokenBatch& prompts, KvCache& cache, float* last_logits, const int32_t* slots) {
  LEAP_RETURN_IF_ERROR(prompts.validate(cfg_.vocab_size));
  if (prompts.B > cache.slots)
    return invalid_input(fmt::format("{} prompts for {} cache slots", prompts.B, cache.slots));
  if (prompts.T > cache.maxT || prompts.T > cfg_.max_position_embeddings)
    return invalid_input(fmt::format("prompt length {} exceeds the context ({} positions)",
                                     prompts.T,
                                     std::min(cache.maxT, cfg_.max_position_embeddings)));
  ensure_rope_tables(cache.maxT);
  const int B = prompts.B, T = prompts.T, C = cfg_.hidden_size, V = cfg_.vocab_size;
  const size_t KD = static_cast<size_t>(cfg_.num_key_value_heads) * cfg_.head_dim;
  auto slot_of = [&](int b) { return slots ? slots[b] : b; };
  for (int b = 0; b < B; ++b)
    if (slot_of(b) < 0 || slot_of(b) >= cache.slots) return invalid_input(fmt::format("cache slot {} of {}", slot_of(b), cache.slots));
  // Each layer's keys and values go to the cache as the layer finishes (with checkpointing only
  // one layer's stay in the activations).
  const KvSink to_cache = [&](int l, const float* k, const float* v) {
    for (int b = 0; b < B; ++b) {
      const size_t src = static_cast<size_t>(b) * T * KD;
      const size_t dst = l * cache.layer_stride() + static_cast<size_t>(slot_of(b)) * cache.maxT * KD;
      be_->copy(cache.k + dst, k + src, static_cast<size_t>(T) * KD);
      be_->copy(cache.v + dst, v + src, static_cast<size_t>(T) * KD);
    }
  };
  forward_blocks(prompts, &to_cache);
  Activations& a = *acts_;
  // Only the last real row of each prompt needs the LM head.
  for (int b = 0; b < B; ++b) {
    be_->copy(a.tmp + static_cast<size_t>(b) * C,
              a.lnf + (static_cast<size_t>(b) * T + prompts.lengths[b] - 1) * C, C);
    cache.len[slot_of(b)] = prompts.lengths[b];
  }
  be_->matmul_forward(a.logits, a.tmp, param_views().lm_head, nullptr, B, C, V);
  be_->download(last_logits, a.logits, static_cast<size_t>(B) * V);
  return Status::ok();
}

void Transformer::decode(const int32_t* tokens, const int32_t* slots, int n, KvCache& cache,
                         float* logits) {
  LEAP_CHECK(n <= cache.slots);
  const int C = cfg_.hidden_size, I = cfg_.intermediate_size, L = cfg_.num_hidden_layers,
            V = cfg_.vocab_size;
  const int H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads, D = cfg_.head_dim;
  const int HD = H * D, KD = Hkv * D;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  ensure_rope_tables(cache.maxT);
  std::vector<int32_t> pos(static_cast<size_t>(n)), lens(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    LEAP_CHECK(tokens[r] >= 0 && tokens[r] < V, "decode token " << tokens[r] << " out of range");
    pos[r] = cache.len[slots[r]];
    LEAP_CHECK(pos[r] < cache.maxT, "KV cache slot " << slots[r] << " is full");
    lens[r] = pos[r] + 1;
  }
  DecodeBuffers d = carve(cfg_, cache.scratch, cache.slots);
  const ParameterViews w = param_views();
  be_->embedding_forward(d.x, tokens, w.wte, n, C);
  for (int l = 0; l < L; ++l) {
    be_->rmsnorm_forward(d.ln, d.rstd, d.x, w.ln1 + l * C, n, C, eps);
    be_->matmul_forward(d.q, d.ln, w.qw + static_cast<size_t>(l) * HD * C,
                        w.qb ? w.qb + l * HD : nullptr, n, C, HD);
    be_->matmul_forward(d.k, d.ln, w.kw + static_cast<size_t>(l) * KD * C,
                        w.kb ? w.kb + l * KD : nullptr, n, C, KD);
    be_->matmul_forward(d.v, d.ln, w.vw + static_cast<size_t>(l) * KD * C,
                        w.vb ? w.vb + l * KD : nullptr, n, C, KD);
    be_->rope_forward(d.q, d.q, rope_cos_, rope_sin_, pos.data(), n, H, D);
    be_->rope_forward(d.k, d.k, rope_cos_, rope_sin_, pos.data(), n, Hkv, D);
    float* kc = cache.k + l * cache.layer_stride();
    float* vc = cache.v + l * cache.layer_stride();
    be_->kv_cache_write(kc, vc, d.k, d.v, slots, pos.data(), n, cache.maxT, Hkv, D);
    be_->attention_decode(d.atty, d.q, kc, vc, slots, lens.data(), n, cache.maxT, H, Hkv, D);
    be_->matmul_forward(d.tmp, d.atty, w.ow + static_cast<size_t>(l) * C * HD,
                        w.ob ? w.ob + l * C : nullptr, n, HD, C);
    be_->add_forward(d.x, d.x, d.tmp, static_cast<size_t>(n) * C);
    be_->rmsnorm_forward(d.ln, d.rstd, d.x, w.ln2 + l * C, n, C, eps);
    be_->matmul_forward(d.gu, d.ln, w.gate_up + static_cast<size_t>(l) * 2 * I * C, nullptr, n, C,
                        2 * I);
    be_->swiglu_forward(d.h, d.gu, n, I);
    be_->matmul_forward(d.tmp, d.h, w.down + static_cast<size_t>(l) * C * I, nullptr, n, I, C);
    be_->add_forward(d.x, d.x, d.tmp, static_cast<size_t>(n) * C);
  }
  be_->rmsnorm_forward(d.ln, d.rstd, d.x, w.lnf, n, C, eps);
  be_->matmul_forward(d.logits, d.ln, w.lm_head, nullptr, n, C, V);
  if (logits != nullptr) be_->download(logits, d.logits, static_cast<size_t>(n) * V);
  for (int r = 0; r < n; ++r) cache.len[slots[r]] = lens[r];
}

}  // namespace leap::model
