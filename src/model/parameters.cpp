// ParameterLayout: where each HF tensor lives in the flat buffer (see parameters.h).
#include "model/parameters.h"

#include <algorithm>

#include <fmt/format.h>

namespace leap::model {
namespace {

std::string layer_name(int l, const char* suffix) {
  return fmt::format("model.layers.{}.{}", l, suffix);
}

// Where tensor `name` starts in a buffer holding, back to back in layout order, only the tensors
// `member` selects; null when there is no such tensor.
template <class Member>
float* compact_at(const std::vector<TensorInfo>& tensors, float* buf, const std::string& name, const Member& member) {
  size_t off = 0;
  for (const auto& t : tensors) {
    if (!member(t.name)) continue;
    if (t.name == name) return buf + off;
    off += t.numel;
  }
  return nullptr;
}

}  // namespace

ParameterLayout::ParameterLayout(const ModelConfig& cfg) : cfg_(cfg) {
  const int64_t V = cfg.vocab_size, C = cfg.hidden_size, I = cfg.intermediate_size;
  const int64_t L = cfg.num_hidden_layers, HD = int64_t{cfg.num_attention_heads} * cfg.head_dim;
  const int64_t KD = int64_t{cfg.num_key_value_heads} * cfg.head_dim;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    TensorInfo t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.numel = 1;
    for (int64_t d : t.shape) t.numel *= static_cast<size_t>(d);
    t.offset = total_;
    total_ += t.numel;
    tensors_.push_back(std::move(t));
  };
  // Order matters: it defines the views below. Matrices first (weight decay), vectors after.
  add("model.embed_tokens.weight", {V, C});
  if (!cfg.tie_word_embeddings) add("lm_head.weight", {V, C});
  for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.q_proj.weight"), {HD, C});
  for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.k_proj.weight"), {KD, C});
  for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.v_proj.weight"), {KD, C});
  for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.o_proj.weight"), {C, HD});
  for (int l = 0; l < L; ++l) {
    add(layer_name(l, "mlp.gate_proj.weight"), {I, C});
    add(layer_name(l, "mlp.up_proj.weight"), {I, C});
  }
  for (int l = 0; l < L; ++l) add(layer_name(l, "mlp.down_proj.weight"), {C, I});
  decay_size_ = total_;
  for (int l = 0; l < L; ++l) add(layer_name(l, "input_layernorm.weight"), {C});
  for (int l = 0; l < L; ++l) add(layer_name(l, "post_attention_layernorm.weight"), {C});
  add("model.norm.weight", {C});
  if (cfg.qkv_bias) {
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.q_proj.bias"), {HD});
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.k_proj.bias"), {KD});
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.v_proj.bias"), {KD});
  }
  if (cfg.o_bias)
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.o_proj.bias"), {C});
  if (cfg.qk_norm) {
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.q_norm.weight"), {cfg.head_dim});
    for (int l = 0; l < L; ++l) add(layer_name(l, "self_attn.k_norm.weight"), {cfg.head_dim});
  }
  for (const auto& t : tensors_)
    if (t.name.starts_with(layer_name(0, ""))) layer_floats_ += t.numel;
}

const TensorInfo* ParameterLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

ParameterViews ParameterLayout::views(float* base) const {
  auto at = [&](const std::string& name) -> float* {
    const TensorInfo* t = find(name);
    return t == nullptr ? nullptr : base + t->offset;
  };
  ParameterViews p;
  p.wte = at("model.embed_tokens.weight");
  p.lm_head = cfg_.tie_word_embeddings ? p.wte : at("lm_head.weight");
  p.qw = at(layer_name(0, "self_attn.q_proj.weight"));
  p.kw = at(layer_name(0, "self_attn.k_proj.weight"));
  p.vw = at(layer_name(0, "self_attn.v_proj.weight"));
  p.ow = at(layer_name(0, "self_attn.o_proj.weight"));
  p.gate_up = at(layer_name(0, "mlp.gate_proj.weight"));
  p.down = at(layer_name(0, "mlp.down_proj.weight"));
  p.ln1 = at(layer_name(0, "input_layernorm.weight"));
  p.ln2 = at(layer_name(0, "post_attention_layernorm.weight"));
  p.lnf = at("model.norm.weight");
  p.qb = at(layer_name(0, "self_attn.q_proj.bias"));
  p.kb = at(layer_name(0, "self_attn.k_proj.bias"));
  p.vb = at(layer_name(0, "self_attn.v_proj.bias"));
  p.ob = at(layer_name(0, "self_attn.o_proj.bias"));
  p.qn = at(layer_name(0, "self_attn.q_norm.weight"));
  p.kn = at(layer_name(0, "self_attn.k_norm.weight"));
  return p;
}

LayerViews ParameterLayout::layer_views(const ParameterViews& p, int l) const {
  const size_t C = static_cast<size_t>(cfg_.hidden_size), I = static_cast<size_t>(cfg_.intermediate_size);
  const size_t HD = static_cast<size_t>(cfg_.num_attention_heads) * cfg_.head_dim;
  const size_t KD = static_cast<size_t>(cfg_.num_key_value_heads) * cfg_.head_dim, L = static_cast<size_t>(l);
  const size_t D = static_cast<size_t>(cfg_.head_dim);
  auto at = [L](float* stack, size_t stride) { return stack == nullptr ? nullptr : stack + L * stride; };
  return {at(p.qw, HD * C), at(p.kw, KD * C), at(p.vw, KD * C), at(p.ow, C * HD), at(p.gate_up, 2 * I * C),
          at(p.down, C * I), at(p.ln1, C),      at(p.ln2, C),      at(p.qb, HD),     at(p.kb, KD),
          at(p.vb, KD),      at(p.ob, C),       at(p.qn, D),       at(p.kn, D)};
}

RestViews ParameterLayout::rest_views(float* base) const {
  const ParameterViews p = views(base);
  return {p.wte, p.lm_head, p.lnf};
}

std::vector<std::pair<size_t, size_t>> ParameterLayout::layer_ranges(int l) const {
  const std::string prefix = layer_name(l, "");
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& t : tensors_)
    if (t.name.starts_with(prefix)) out.emplace_back(t.offset, t.numel);
  std::sort(out.begin(), out.end());
  std::vector<std::pair<size_t, size_t>> merged;
  for (const auto& r : out) {
    if (!merged.empty() && merged.back().first + merged.back().second == r.first)
      merged.back().second += r.second;
    else
      merged.push_back(r);
  }
  return merged;
}

LayerViews ParameterLayout::compact_layer_views(float* buf) const {
  // Layer 0's tensors, in layout order, back to back (every layer has the same ones).
  const std::string first = layer_name(0, "");
  auto at = [&](const char* suffix) {
    return compact_at(tensors_, buf, first + suffix, [&](const std::string& n) { return n.starts_with(first); });
  };
  return {at("self_attn.q_proj.weight"), at("self_attn.k_proj.weight"),  at("self_attn.v_proj.weight"),
          at("self_attn.o_proj.weight"), at("mlp.gate_proj.weight"),     at("mlp.down_proj.weight"),
          at("input_layernorm.weight"),  at("post_attention_layernorm.weight"), at("self_attn.q_proj.bias"),
          at("self_attn.k_proj.bias"),   at("self_attn.v_proj.bias"),    at("self_attn.o_proj.bias"),
          at("self_attn.q_norm.weight"), at("self_attn.k_norm.weight")};
}

RestViews ParameterLayout::compact_rest_views(float* buf) const {
  // The tensors no layer owns, in layout order, back to back.
  auto at = [&](const char* name) {
    return compact_at(tensors_, buf, name, [](const std::string& n) { return !n.starts_with("model.layers."); });
  };
  RestViews r{at("model.embed_tokens.weight"), at("lm_head.weight"), at("model.norm.weight")};
  if (cfg_.tie_word_embeddings) r.lm_head = r.wte;
  return r;
}

}  // namespace leap::model
