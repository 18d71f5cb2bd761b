// The benchmark model of leap_gpu_check's train and decode benchmarks and of
// benchmarks/gpu/torch_eager.py: a Llama-family decoder of about 124M parameters (GPT-2
// small's width and depth: C = 768, L = 12, H = 12, D = 64; SwiGLU with I = 2048, so the MLP
// has GPT-2's 4.7M parameters per layer; V = 50304, tied embeddings).
#pragma once

#include "model/model_config.h"

namespace leap::cuda::check {

inline model::ModelConfig bench_model_config() {
  model::ModelConfig c;
  c.model_type = "llama";
  c.vocab_size = 50304;
  c.hidden_size = 768;
  c.intermediate_size = 2048;
  c.num_hidden_layers = 12;
  c.num_attention_heads = 12;
  c.num_key_value_heads = 12;
  c.head_dim = 64;
  c.max_position_embeddings = 2048;
  c.rope_theta = 10000.0;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = true;
  return c;
}

}  // namespace leap::cuda::check
