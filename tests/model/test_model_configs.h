// Small model configs shared by the model tests: every architecture field given, so a test names
// only what it varies (vocabulary, widths, layers).
#pragma once

#include "model/model_config.h"

namespace leap::model::testing {

// A Llama-family decoder (Qwen2 biases on q/k/v when qwen2, Qwen3's per-head q/k norms when
// qwen3), 4 query heads on 2 KV heads.
inline ModelConfig small_config(const char* type, int vocab, int hidden, int intermediate, int layers,
                                int context) {
  ModelConfig c;
  c.model_type = type;
  c.qkv_bias = c.model_type == "qwen2";
  c.qk_norm = c.model_type == "qwen3";
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = hidden / 4;
  c.max_position_embeddings = context;
  c.eos_token_id = 0;
  return c;
}

}  // namespace leap::model::testing
