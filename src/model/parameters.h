// The policy's parameters: ONE contiguous fp32 buffer, described by a layout of named tensors
// (Hugging Face names and shapes), with a struct of typed views into it. The gradient buffer has
// the same layout, so the distributed loop all-reduces one flat array.
//
// Layout invariants:
// - Tensors of one kind are stacked over layers (llm.c style): q_proj of layer l starts at
//   qw + l * H*D*C. gate_proj and up_proj of a layer are adjacent, forming one (2I, C) matrix
//   so the MLP's first matmul is a single GEMM.
// - Matrices (2-D tensors, which take weight decay) come first, vectors (norms, biases) after:
//   weight decay applies to the prefix [0, decay_size).
// - When embeddings are tied there is no lm_head tensor: lm_head views alias wte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/model_config.h"

namespace leap::model {

struct TensorInfo {
  std::string name;            // HF name, e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // HF shape, e.g. {H*D, C}
  size_t offset = 0;           // in floats, into the flat buffer
  size_t numel = 0;
};

// Typed pointers into a flat buffer laid out by ParameterLayout (parameters or gradients).
struct ParameterViews {
  float* wte = nullptr;      // (V, C)            model.embed_tokens.weight
  float* lm_head = nullptr;  // (V, C)            lm_head.weight; == wte when tied
  float* qw = nullptr;       // (L, H*D, C)       self_attn.q_proj.weight
  float* kw = nullptr;       // (L, Hkv*D, C)     self_attn.k_proj.weight
  float* vw = nullptr;       // (L, Hkv*D, C)     self_attn.v_proj.weight
  float* ow = nullptr;       // (L, C, H*D)       self_attn.o_proj.weight
  float* gate_up = nullptr;  // (L, 2I, C)        mlp.gate_proj.weight then mlp.up_proj.weight
  float* down = nullptr;     // (L, C, I)         mlp.down_proj.weight
  float* ln1 = nullptr;      // (L, C)            input_layernorm.weight
  float* ln2 = nullptr;      // (L, C)            post_attention_layernorm.weight
  float* lnf = nullptr;      // (C)               model.norm.weight
  float* qb = nullptr;       // (L, H*D) or null  self_attn.q_proj.bias
  float* kb = nullptr;       // (L, Hkv*D) or null
  float* vb = nullptr;       // (L, Hkv*D) or null
  float* ob = nullptr;       // (L, C) or null    self_attn.o_proj.bias (llama attention_bias)
  float* qn = nullptr;       // (L, D) or null    self_attn.q_norm.weight (qwen3)
  float* kn = nullptr;       // (L, D) or null    self_attn.k_norm.weight (qwen3)
};

// One transformer layer's tensors in some buffer (a ParameterViews' stacked arrays at layer l, or
// a compact buffer that holds that layer alone); the biases and q/k norms are null where the
// model has none.
struct LayerViews {
  float *qw = nullptr, *kw = nullptr, *vw = nullptr, *ow = nullptr, *gate_up = nullptr, *down = nullptr;
  float *ln1 = nullptr, *ln2 = nullptr, *qb = nullptr, *kb = nullptr, *vb = nullptr, *ob = nullptr;
  float *qn = nullptr, *kn = nullptr;
};

// The tensors outside the layers: embedding, LM head (== wte when tied) and final norm.
struct RestViews {
  float *wte = nullptr, *lm_head = nullptr, *lnf = nullptr;
};

class ParameterLayout {
 public:
  explicit ParameterLayout(const ModelConfig& cfg);
  const ModelConfig& config() const { return cfg_; }

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  size_t total() const { return total_; }            // floats in the flat buffer
  size_t decay_size() const { return decay_size_; }  // leading floats that take weight decay
  const TensorInfo* find(const std::string& name) const;
  ParameterViews views(float* base) const;
  // Layer l of the flat buffer whose views are `p`.
  LayerViews layer_views(const ParameterViews& p, int l) const;
  RestViews rest_views(float* base) const;

  // Compact buffers for gradients that are not kept whole (ZeRO stage 2, gradient_stream.h):
  // one layer's tensors back to back in layout order (the same for every layer), and the
  // tensors outside the layers back to back in layout order. Concatenating a layer's ranges of
  // the flat buffer (or the ranges no layer covers), in order, gives exactly these buffers.
  size_t layer_floats() const { return layer_floats_; }
  size_t rest_floats() const { return total_ - layer_floats_ * static_cast<size_t>(cfg_.num_hidden_layers); }
  LayerViews compact_layer_views(float* buf) const;
  RestViews compact_rest_views(float* buf) const;
  // Layer l's tensors ("model.layers.{l}.*") as (offset, count) ranges of the flat buffer, in
  // order, adjacent ones merged (gate_proj then up_proj is one range): the pieces that become
  // the compact layer buffer, and one layer's gradient bucket.
  std::vector<std::pair<size_t, size_t>> layer_ranges(int l) const;

 private:
  ModelConfig cfg_;
  std::vector<TensorInfo> tensors_;
  size_t total_ = 0;
  size_t decay_size_ = 0;
  size_t layer_floats_ = 0;  // floats of one layer's tensors
};

}  // namespace leap::model
