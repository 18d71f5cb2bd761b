// Transformer inference over the paged KV cache (kv_cache.h): prefill (full prompts, reusing
// the training forward), single-token decode, and extend (a later turn's new tokens after a
// conversation the cache already holds). Decode and extend run the same ops as training on n
// rows, with attention_decode reading each row's blocks; their log-probs equal the full
// forward's up to float rounding (tests/model checks this).
#include <fmt/format.h>

#include "common/check.h"
#include "model/transformer.h"
#include "model/transformer_activations.h"

namespace leap::model {

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
  auto slot_of = [&](int b) { return slots ? slots[b] : b; };
  for (int b = 0; b < B; ++b)
    if (slot_of(b) < 0 || slot_of(b) >= cache.slots) return invalid_input(fmt::format("cache slot {} of {}", slot_of(b), cache.slots));
  // Each prompt's positions get blocks; row (b, t) goes to its block and offset, a padding row
  // to the sink block.
  std::vector<int32_t> block(static_cast<size_t>(B) * T), offset(block.size());
  for (int b = 0; b < B; ++b) {
    cache.clear(slot_of(b));
    cache.reserve(slot_of(b), prompts.lengths[b]);
    for (int t = 0; t < T; ++t) {
      const size_t r = static_cast<size_t>(b) * T + t;
      block[r] = t < prompts.lengths[b] ? cache.block_of(slot_of(b), t) : cache.sink_block();
      offset[r] = t % cache.block_size;
    }
  }
  // Each layer's keys and values go to the cache as the layer finishes (with checkpointing only
  // one layer's stay in the activations): one write of the whole batch per layer.
  const KvSink to_cache = [&](int l, const float* k, const float* v) {
    be_->kv_cache_write(cache.k + l * cache.layer_stride(), cache.v + l * cache.layer_stride(), k,
                        v, block.data(), offset.data(), B * T, cache.block_size,
                        cfg_.num_key_value_heads, cfg_.head_dim, cache.dtype);
  };
  FlatWeights own(layout_, params_);
  forward_blocks(own, prompts, &to_cache);
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

void Transformer::forward_cached(const int32_t* tokens, const int32_t* slots, const int32_t* pos,
                                 int n, KvCache& cache) {
  LEAP_CHECK(n <= cache.slots + kKvExtendRows);
  const int C = cfg_.hidden_size, I = cfg_.intermediate_size, L = cfg_.num_hidden_layers,
            V = cfg_.vocab_size;
  const int H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads, D = cfg_.head_dim;
  const int HD = H * D, KD = Hkv * D;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  ensure_rope_tables(cache.maxT);
  std::vector<int32_t> lens(static_cast<size_t>(n)), block(static_cast<size_t>(n)),
      offset(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    LEAP_CHECK(tokens[r] >= 0 && tokens[r] < V, "token " << tokens[r] << " out of range");
    LEAP_CHECK(pos[r] < cache.maxT, "KV cache slot " << slots[r] << " is full");
    cache.reserve(slots[r], pos[r] + 1);
    lens[r] = pos[r] + 1;
    block[r] = cache.block_of(slots[r], pos[r]);
    offset[r] = pos[r] % cache.block_size;
  }
  std::vector<int32_t> table;
  const int max_blocks = cache.tables(slots, n, &table);
  KvScratch d = carve_kv_scratch(cfg_, cache.scratch, cache.slots + kKvExtendRows);
  const ParameterViews w = param_views();
  be_->embedding_forward(d.x, tokens, w.wte, n, C);
  for (int l = 0; l < L; ++l) {
    be_->rmsnorm_forward(d.ln, d.rstd, d.x, w.ln1 + l * C, n, C, eps);
    // Qwen3 normalises each head's query and key: the training forward's order (projection,
    // norm, RoPE).
    float* q_out = cfg_.qk_norm ? d.q_lin : d.q;
    float* k_out = cfg_.qk_norm ? d.k_lin : d.k;
    be_->matmul_forward(q_out, d.ln, w.qw + static_cast<size_t>(l) * HD * C,
                        w.qb ? w.qb + l * HD : nullptr, n, C, HD);
    be_->matmul_forward(k_out, d.ln, w.kw + static_cast<size_t>(l) * KD * C,
                        w.kb ? w.kb + l * KD : nullptr, n, C, KD);
    if (cfg_.qk_norm) {
      be_->rmsnorm_forward(d.q, d.qk_rstd, d.q_lin, w.qn + static_cast<size_t>(l) * D, n * H, D,
                           eps);
      be_->rmsnorm_forward(d.k, d.qk_rstd, d.k_lin, w.kn + static_cast<size_t>(l) * D, n * Hkv, D,
                           eps);
    }
    be_->matmul_forward(d.v, d.ln, w.vw + static_cast<size_t>(l) * KD * C,
                        w.vb ? w.vb + l * KD : nullptr, n, C, KD);
    be_->rope_forward(d.q, d.q, rope_cos_, rope_sin_, pos, n, H, D);
    be_->rope_forward(d.k, d.k, rope_cos_, rope_sin_, pos, n, Hkv, D);
    float* kc = cache.k + l * cache.layer_stride();
    float* vc = cache.v + l * cache.layer_stride();
    be_->kv_cache_write(kc, vc, d.k, d.v, block.data(), offset.data(), n, cache.block_size, Hkv,
                        D, cache.dtype);
    be_->attention_decode(d.atty, d.q, kc, vc, table.data(), max_blocks, lens.data(), n,
                          cache.block_size, H, Hkv, D, cache.dtype);
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
  for (int r = 0; r < n; ++r)
    cache.len[slots[r]] = std::max(cache.len[slots[r]], lens[r]);
}

void Transformer::decode(const int32_t* tokens, const int32_t* slots, int n, KvCache& cache,
                         float* logits) {
  const KvScratch d = carve_kv_scratch(cfg_, cache.scratch, cache.slots + kKvExtendRows);
  decode_into(tokens, slots, n, cache, d.logits);
  if (logits != nullptr) be_->download(logits, d.logits, static_cast<size_t>(n) * cfg_.vocab_size);
}

void Transformer::decode_into(const int32_t* tokens, const int32_t* slots, int n, KvCache& cache,
                              float* out) {
  LEAP_CHECK(n <= cache.slots);
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) pos[r] = cache.len[slots[r]];
  forward_cached(tokens, slots, pos.data(), n, cache);
  const KvScratch d = carve_kv_scratch(cfg_, cache.scratch, cache.slots + kKvExtendRows);
  be_->matmul_forward(out, d.ln, param_views().lm_head, nullptr, n, cfg_.hidden_size, cfg_.vocab_size);
}

void Transformer::extend(const std::vector<std::vector<int32_t>>& tokens, const int32_t* slots,
                         KvCache& cache, float* last_logits) {
  const int n = static_cast<int>(tokens.size()), C = cfg_.hidden_size, V = cfg_.vocab_size;
  LEAP_CHECK(n <= cache.slots);
  const int cap = cache.slots + kKvExtendRows;
  // The rows of all sequences in order, cut into chunks of at most `cap`; a sequence's last row
  // gets the LM head in its chunk.
  std::vector<int32_t> tok, slot, pos, seq;
  for (int i = 0; i < n; ++i) {
    LEAP_CHECK(!tokens[i].empty(), "extending slot " << slots[i] << " by no tokens");
    for (size_t j = 0; j < tokens[i].size(); ++j) {
      tok.push_back(tokens[i][j]);
      slot.push_back(slots[i]);
      pos.push_back(cache.len[slots[i]] + static_cast<int32_t>(j));
      seq.push_back(j + 1 == tokens[i].size() ? i : -1);
    }
  }
  const KvScratch d = carve_kv_scratch(cfg_, cache.scratch, cap);
  for (size_t start = 0; start < tok.size(); start += static_cast<size_t>(cap)) {
    const int rows = static_cast<int>(std::min(tok.size() - start, static_cast<size_t>(cap)));
    forward_cached(tok.data() + start, slot.data() + start, pos.data() + start, rows, cache);
    std::vector<int> last;
    for (int r = 0; r < rows; ++r)
      if (seq[start + r] >= 0) {
        be_->copy(d.tmp + last.size() * C, d.ln + static_cast<size_t>(r) * C, C);
        last.push_back(seq[start + r]);
      }
    if (last.empty()) continue;
    const int m = static_cast<int>(last.size());
    be_->matmul_forward(d.logits, d.tmp, param_views().lm_head, nullptr, m, C, V);
    std::vector<float> host(static_cast<size_t>(m) * V);
    be_->download(host.data(), d.logits, host.size());
    for (int j = 0; j < m; ++j)
      std::copy_n(host.data() + static_cast<size_t>(j) * V, V,
                  last_logits + static_cast<size_t>(last[j]) * V);
  }
}

}  // namespace leap::model
