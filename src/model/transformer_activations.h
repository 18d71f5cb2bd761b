// Transformer::Activations: the saved activations of the last forward and the backward's
// scratch, for one (B, T). Private to the model's .cpp files (training and inference share it).
#pragma once

#include <cstdint>
#include <vector>

#include "model/float_arena.h"
#include "model/transformer.h"

namespace leap::model {

// Saved activations of the last forward and the backward's scratch, for one (B, T).
// Per-layer arrays are stacked: layer l of q is q + l * N*H*D (one slot only when
// checkpointing: Transformer::layer_acts).
struct Transformer::Activations {
  explicit Activations(backend::Backend& be) : arena(be) {}
  FloatArena arena;
  int B = 0, T = 0;
  size_t layer_slots = 0;    // L, or 1 with activation checkpointing (per-layer arrays below)
  float* res = nullptr;      // (L+1, N, C) residual stream entering each layer; [L] = final
  float* ln1 = nullptr;      // (L, N, C)
  float* rstd1 = nullptr;    // (L, N)
  float* q = nullptr;        // (L, N, H*D) after RoPE
  float* k = nullptr;        // (L, N, Hkv*D) after RoPE
  float* q_lin = nullptr;    // (L, N, H*D) q_proj's output before the q norm (qwen3; else null)
  float* k_lin = nullptr;    // (L, N, Hkv*D) k_proj's output before the k norm (qwen3)
  float* rstdq = nullptr;    // (L, N*H) the q norm's per-head rstd (qwen3)
  float* rstdk = nullptr;    // (L, N*Hkv) the k norm's (qwen3)
  float* v = nullptr;        // (L, N, Hkv*D)
  float* att = nullptr;      // (L, attention_saved_floats(B, T, H, D)); CPU: probabilities
  float* atty = nullptr;     // (L, N, H*D) attention output before o_proj
  float* res_mid = nullptr;  // (L, N, C) residual after the attention branch
  float* ln2 = nullptr;      // (L, N, C)
  float* rstd2 = nullptr;    // (L, N)
  float* gu = nullptr;       // (L, N, 2I) [gate | up]
  float* hmlp = nullptr;     // (L, N, I) silu(gate) * up
  float* lnf = nullptr;      // (N, C)
  float* rstdf = nullptr;    // (N)
  size_t logit_rows = 0;     // rows of one LM-head chunk (Transformer::logit_rows)
  float* logits = nullptr;   // (logit_rows, V): one chunk
  float* lse = nullptr;      // (N) of the logits times logit_scale
  float logit_scale = 1.0f;  // the inverse temperature of the forward's log-probs
  float* lp = nullptr;       // (N) log-prob of the next token, row-aligned (row t predicts t+1)
  float* tmp = nullptr;      // (N, C) branch output before the residual add
  // backward scratch, reused by every layer
  float* dres = nullptr;                               // (N, C)
  float* dln = nullptr;                                // (N, C)
  float* dq = nullptr;                                 // (N, H*D)
  float* dk = nullptr;                                 // (N, Hkv*D)
  float* dv = nullptr;                                 // (N, Hkv*D)
  float* dq_pre = nullptr;                             // (N, H*D) before RoPE
  float* dk_pre = nullptr;                             // (N, Hkv*D)
  float* datty = nullptr;                              // (N, H*D)
  float* dgu = nullptr;                                // (N, 2I)
  float* dh = nullptr;                                 // (N, I)
  float* dlogits = nullptr;                            // (logit_rows, V)
  float* dlp = nullptr;                                // (N)
  std::vector<int32_t> tokens, targets, pos, lengths;  // (N), (N), (N), (B)
};

}  // namespace leap::model
