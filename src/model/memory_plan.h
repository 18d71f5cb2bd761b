// The memory one policy rank of `leap train` needs, by kind, computed from the model's
// config.json and the run's config alone (nothing is allocated): what `leap plan` prints.
//
// Every figure follows an allocation the code makes today, so the plan changes with the code:
//  - master weights, gradients: the Transformer's two flat fp32 buffers (parameters.h); with
//    ZeRO stage 2 the gradient is this rank's shard of the sum and two compact buffers instead
//    (mpi/zero_gradients.h);
//  - optimizer state: AdamW's m and v, fp32 (optimizer.h), all of them or, with ZeRO stage 1,
//    this rank's 1/policy_ranks of them (mpi/zero_shard.h);
//  - weights: the compute copies the GEMMs read: bf16 on the CUDA backend (compute_copies.h) of
//    every matrix a GEMM reads (the layers' and the LM head's; not an untied embedding, which is
//    looked up in fp32, nor the norms and biases), none on the CPU, whose GEMMs read the masters.
//    With the masters in the optimizer (optim.master_weights = optimizer) the weights are the
//    model's own buffer (Backend::alloc_weights): on CUDA every matrix in bf16 (their only copy)
//    and the norms and biases in fp32, mapped in 2 MiB pages; on the CPU all of it in fp32; and
//    the master weights are the optimizer's fp32 copy of its shard (none in leap eval);
//  - activations: the training arena of transformer.cpp for one micro-batch of the longest
//    sequence, backward scratch included, but without the logits; with activation
//    checkpointing, the residual stream of every layer and one layer's activations;
//  - logits: one chunk of LM-head logits and its gradient, fp32 (Transformer::logit_rows);
//  - kl_reference: the frozen copy of the weights (rl.kl_beta > 0): fp32, plus its bf16 compute
//    copies on CUDA; or bf16 with one layer's fp32 scratch and one for the LM head (and their
//    compute copies on CUDA), as reference_policy.h keeps it;
//  - kv_cache: the sampler's paged cache (kv_cache.h): blocks for generation_batch_seqs decoding
//    sequences and kv_keep_sequences kept ones, each of the longest prompt plus max_new_tokens,
//    in fp32 or bf16, and its fp32 decode and extend scratch. It stays allocated;
//  - workspace: the RoPE tables, the sampler's logits rows and, on CUDA, the cuBLASLt
//    workspace, the bf16 GEMM operand buffers and, with optim.grad_comm_dtype = bf16, NCCL's
//    staging of one layer's gradient in bf16 (over MPI the bf16 copies last one call).
// Weights are full replicas on every policy rank; stage 1's moments shrink with the rank count,
// and with stage 2 the gradient does too. A rank of leap eval (PlanInput::trains false) holds the
// weights, the prefill's arena, the KV cache and the workspace only.
//
// tests/model/test_memory_plan.cpp checks the plan against glibc's count of the CPU backend's
// real allocations (mallinfo2), as differences between configs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace leap::model {

struct PlanInput {
  ModelConfig model;
  std::string backend = "cpu";  // "cpu" or "cuda"
  int micro_batch_seqs = 8;     // B of a training micro-batch (and of a prefill)
  int generation_batch_seqs = 0;  // sequences decoding together (sampler.batch_seqs); 0: micro_batch_seqs
  int64_t train_tokens = 0;     // T: the longest training sequence (prompt + completion)
  int64_t prompt_tokens = 0;    // the longest prompt a generation batch prefills
  int64_t max_new_tokens = 0;
  int kv_block_tokens = 16;     // sampler.kv_block_tokens
  int kv_keep_sequences = 0;    // sampler.kv_keep_sequences (0 unless sampler.reuse_kv)
  bool kv_bf16 = false;         // sampler.kv_cache_dtype resolved for the backend (bf16 or fp32)
  bool kl_reference = false;    // rl.kl_beta > 0
  bool kl_reference_bf16 = false;  // rl.kl_reference_dtype resolved for the backend
  uint64_t logits_chunk_bytes = uint64_t{256} << 20;  // model.logits_chunk_mib
  bool activation_checkpointing = false;              // train.activation_checkpointing
  int zero_stage = 0;                                 // optim.zero_stage
  int policy_ranks = 1;                               // what stages 1 and 2 shard over
  bool grad_comm_bf16 = false;                        // optim.grad_comm_dtype = bf16
  // optim.master_weights resolved (OptimConfig::masters_in_optimizer): the model keeps its
  // matrices in bf16 (on CUDA their only copy), the optimizer the fp32 masters of its shard.
  bool masters_in_optimizer = false;
  bool generates = true;  // RL samples (a KV cache, the sampler's logits rows); SFT never does
  // false: a rank of leap eval, built for sampling only (apps/rank_setup.h): no gradient, no
  // optimizer state, no KL reference, and the activations are the prefill's, a micro-batch of
  // prompts of prompt_tokens (train_tokens is not used).
  bool trains = true;
};

struct PlanItem {
  std::string kind;  // "weights", "master_weights", ... (see above)
  uint64_t bytes = 0;
  std::string note;  // how it was counted, for the table
};

struct MemoryPlan {
  std::vector<PlanItem> items;  // in the order above
  uint64_t total = 0;
  uint64_t parameters = 0;  // floats of the flat parameter buffer
};

MemoryPlan plan_policy_rank(const PlanInput& in);

// Floats of the training arena for a (B, T) batch, logits and their gradient excluded;
// `attention_floats` is what the backend's attention saves per layer (backend.h); layer_slots is
// L, or 1 with activation checkpointing.
uint64_t activation_floats(const ModelConfig& c, int64_t B, int64_t T, uint64_t attention_floats,
                           uint64_t layer_slots);
// Floats the attention of one layer saves for the backward: the CPU keeps the probabilities
// (B, H, T, T); CUDA keeps the per-row logsumexp and a copy of the output.
uint64_t attention_saved_floats(const std::string& backend, int64_t B, int64_t T, int H, int D);

}  // namespace leap::model
