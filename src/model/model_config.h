// The policy's architecture, read from and written to a Hugging Face style config.json
// (model_type llama, qwen2 or qwen3). Only what this implementation computes exactly is accepted:
// anything else (rope_scaling, MLP bias, sliding windows, other activations) is an error that
// names the key, never a silent difference from HF transformers.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace leap::model {

struct ModelConfig {
  std::string model_type = "llama";  // "llama", "qwen2" or "qwen3"
  int vocab_size = 0;                // V
  int hidden_size = 0;               // C
  int intermediate_size = 0;         // I
  int num_hidden_layers = 0;         // L
  int num_attention_heads = 0;       // H
  int num_key_value_heads = 0;       // Hkv; H % Hkv == 0
  int head_dim = 0;                  // D; HF default hidden_size / num_attention_heads (qwen3: 128)
  int max_position_embeddings = 0;   // maxT
  double rope_theta = 10000.0;
  // RoPE scaling: none, or Llama-3.1's "llama3" (low frequencies divided by `factor`, a smooth
  // ramp between the two wavelength bounds), as config.json's rope_scaling gives it.
  struct RopeScaling {
    std::string type;  // "" (none) or "llama3"
    double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
    int original_max_position_embeddings = 8192;
  } rope_scaling;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  // Biases on q/k/v (Qwen2 always; Llama and Qwen3 with attention_bias also on o_proj).
  bool qkv_bias = false;
  bool o_bias = false;
  // Qwen3: an RMSNorm over each head's query and key (head_dim weights, self_attn.q_norm and
  // k_norm), after the projection and before RoPE.
  bool qk_norm = false;
  int bos_token_id = -1;  // -1: none
  int eos_token_id = -1;

  // Checks ranges and divisibility; `where` names the file for the message.
  Status validate(const std::string& where) const;
};

// The RoPE inverse frequencies (head_dim / 2 of them) as transformers computes them in fp32:
// 1 / theta^(2i/D), then the rope_scaling rule.
std::vector<float> rope_inv_freq(const ModelConfig& cfg);

// Parses config.json text. `where` is the file name used in error messages.
Expected<ModelConfig> parse_model_config(const std::string& json_text, const std::string& where);
Expected<ModelConfig> read_model_config(const std::string& path);
// HF-compatible JSON (architectures, model_type, ...); torch_dtype names how the weights beside
// it are stored ("float32" or "bfloat16").
std::string model_config_to_json(const ModelConfig& cfg, const std::string& torch_dtype = "float32");
Status write_model_config(const std::string& path, const ModelConfig& cfg,
                          const std::string& torch_dtype = "float32");

}  // namespace leap::model
