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

// Qwen2.5-1.5B's shapes (models/qwen2.5-coder-1.5b/config.json: C = 1536, L = 28, 12 heads of
// 128 with 2 KV heads, I = 8960, V = 151936, tied embeddings, q/k/v biases; 1.54B parameters),
// with random weights: the train check's `--model=1.5b`, which compares leap plan's prediction
// with the memory the step really takes.
inline model::ModelConfig bench_model_1p5b_config() {
  model::ModelConfig c;
  c.model_type = "qwen2";
  c.vocab_size = 151936;
  c.hidden_size = 1536;
  c.intermediate_size = 8960;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 12;
  c.num_key_value_heads = 2;
  c.head_dim = 128;
  c.max_position_embeddings = 32768;
  c.rope_theta = 1000000.0;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = true;
  c.qkv_bias = true;
  return c;
}

}  // namespace leap::cuda::check
