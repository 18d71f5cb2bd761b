// plan_policy_rank(): the per-kind bytes of one policy rank (see memory_plan.h for what each
// kind follows in the code).
#include "model/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/kv_cache.h"
#include "model/parameters.h"

namespace leap::model {
namespace {

// FloatArena rounds every array up to 16 floats (64 bytes).
uint64_t arena_floats(uint64_t n) { return (n + 15) / 16 * 16; }

}  // namespace

uint64_t attention_saved_floats(const std::string& backend, int64_t B, int64_t T, int H, int D) {
  const uint64_t rows = static_cast<uint64_t>(B) * T * H;
  if (backend == "cuda") return (rows + 15) / 16 * 16 + rows * D;
  return rows * T;
}

uint64_t activation_floats(const ModelConfig& c, int64_t B, int64_t T, uint64_t attention_floats,
                           uint64_t layer_slots) {
  const uint64_t N = static_cast<uint64_t>(B) * T, L = c.num_hidden_layers, C = c.hidden_size,
                 I = c.intermediate_size, S = layer_slots;
  const uint64_t HD = static_cast<uint64_t>(c.num_attention_heads) * c.head_dim;
  const uint64_t KD = static_cast<uint64_t>(c.num_key_value_heads) * c.head_dim;
  const uint64_t saved[] = {
      (L + 1) * N * C,  // residual stream entering each layer, and the final one
      S * N * C,        // ln1
      S * N,            // rstd1
      S * N * HD,       // q
      S * N * KD,       // k
      S * N * KD,       // v
      S * attention_floats,
      S * N * HD,     // attention output
      S * N * C,      // residual after attention
      S * N * C,      // ln2
      S * N,          // rstd2
      S * N * 2 * I,  // gate | up
      S * N * I,      // silu(gate) * up
      N * C,          // final norm
      N,              // its rstd
      N,              // logsumexp
      N,              // log-probs
      N * C,          // branch output
  };
  const uint64_t scratch[] = {N * C, N * C, N * HD, N * KD, N * KD, N * HD,
                              N * KD, N * HD, N * 2 * I, N * I, N};
  uint64_t total = 0;
  for (uint64_t n : saved) total += arena_floats(n);
  for (uint64_t n : scratch) total += arena_floats(n);
  if (c.qk_norm) {  // qwen3: q_proj's and k_proj's outputs before their norms, and the norms' rstd
    const uint64_t H = c.num_attention_heads, Hkv = c.num_key_value_heads;
    for (uint64_t n : {S * N * HD, S * N * KD, S * N * H, S * N * Hkv}) total += arena_floats(n);
  }
  return total;
}

MemoryPlan plan_policy_rank(const PlanInput& in) {
  const ModelConfig& c = in.model;
  const bool cuda = in.backend == "cuda";
  MemoryPlan plan;
  plan.parameters = ParameterLayout(c).total();
  const uint64_t P = plan.parameters, B = static_cast<uint64_t>(std::max(1, in.micro_batch_seqs));
  // A training rank's arena is a micro-batch of the longest sequence; an evaluating one's is the
  // prefill's, a micro-batch of the longest prompt.
  const uint64_t T = static_cast<uint64_t>(std::max<int64_t>(1, in.trains ? in.train_tokens : in.prompt_tokens));
  const uint64_t N = B * T, V = c.vocab_size;
  auto add = [&](std::string kind, uint64_t bytes, std::string note) {
    plan.items.push_back({std::move(kind), bytes, std::move(note)});
    plan.total += bytes;
  };

  // The GEMMs' bf16 copies (cuda/compute_copies.h) are of matrices only: every layer's and the LM
  // head's (the embedding's when tied). An untied embedding is looked up in fp32 rows, and the
  // norms and biases are read in fp32.
  const ParameterLayout layout(c);
  const uint64_t head_matrix = V * static_cast<uint64_t>(c.hidden_size);
  const uint64_t gemm = layout.decay_size() - (c.tie_word_embeddings ? 0 : head_matrix);
  const uint64_t layer_matrices =
      (gemm - head_matrix) / static_cast<uint64_t>(std::max(1, c.num_hidden_layers));
  // ZeRO: each bucket split evenly over the ranks, so a rank holds P / ranks floats, plus at most
  // one per piece of the plan (a few hundred floats: not counted).
  const uint64_t R = static_cast<uint64_t>(std::max(1, in.policy_ranks)), shard = (P + R - 1) / R;
  const bool sharded = in.trains && in.zero_stage >= 1;
  if (!in.masters_in_optimizer) {
    add("weights", cuda ? 2 * gemm : 0,
        cuda ? "bf16 compute copies of the matrices the GEMMs read"
             : "none: the CPU's GEMMs read the fp32 masters");
    add("master_weights", 4 * P, fmt::format("{} parameters in fp32, a full replica", P));
  } else {
    // cuda/bf16_weights.h: the matrices' bf16 buffer, and the fp32 vectors mapped in pages of
    // 2 MiB (the granularity of CUDA's virtual memory on current GPUs) from the page that holds
    // the first of them.
    const uint64_t nd = layout.decay_size(), page = uint64_t{2} << 20;
    const uint64_t vectors = ((4 * P + page - 1) / page) * page - (4 * nd / page) * page;
    add("weights", cuda ? 2 * nd + vectors : 4 * P,
        cuda ? "every matrix in bf16 (the GEMMs' only copy), the norms and biases in fp32"
             : "fp32 floats holding the bf16 values of the matrices (the CPU computes in fp32)");
    if (!in.trains)
      add("master_weights", 0, "none: sampling only (leap eval)");
    else
      add("master_weights", 4 * (sharded ? shard : P),
          sharded ? fmt::format(
                        "fp32, in the optimizer state: this rank's 1/{} of them (ZeRO stage {})", R,
                        in.zero_stage)
                  : std::string("fp32, in the optimizer state, all of them (ZeRO stage 0)"));
  }
  if (!in.trains) {
    add("gradients", 0, "none: sampling only (leap eval)");
  } else if (in.zero_stage >= 2) {
    add("gradients", 4 * (shard + 2 * layout.layer_floats() + layout.rest_floats()),
        fmt::format("fp32: this rank's 1/{} of the sum, two layers' buffers (one written by the backward, "
                    "one in its reduce-scatter) and the embedding, LM head and final norm's (ZeRO stage 2)",
                    R));
  } else {
    add("gradients", 4 * P, "fp32, a full replica");
  }
  if (!in.trains) {
    add("optimizer_state", 0, "none: sampling only (leap eval)");
  } else if (in.zero_stage >= 1) {
    add("optimizer_state", 8 * shard,
        fmt::format("AdamW m and v, fp32, this rank's 1/{} of them (ZeRO stage {})", R, in.zero_stage));
  } else {
    add("optimizer_state", 8 * P, "AdamW m and v, fp32");
  }
  const uint64_t att = attention_saved_floats(in.backend, static_cast<int64_t>(B),
                                              static_cast<int64_t>(T), c.num_attention_heads,
                                              c.head_dim);
  const uint64_t slots = in.activation_checkpointing ? 1 : c.num_hidden_layers;
  add("activations",
      4 * activation_floats(c, static_cast<int64_t>(B), static_cast<int64_t>(T), att, slots),
      fmt::format("{}{}, B={} T={}{}", in.trains ? "" : "the prefill's arena, ",
                  in.activation_checkpointing
                      ? "checkpointed: each layer's input and one layer's activations"
                      : (in.trains ? "every layer's, kept for the backward (no checkpointing)"
                                   : "every layer's (no checkpointing)"),
                  B, T, cuda ? "" : "; attention probabilities (B, H, T, T) per layer"));
  // Transformer::logit_rows: as many rows as the chunk bytes allow, at least B, at most N.
  const uint64_t rows = std::min(N, std::max<uint64_t>({in.logits_chunk_bytes / (4 * V), B, 1}));
  add("logits", 4 * 2 * arena_floats(rows * V),
      fmt::format("LM-head logits and their gradient, {} of the {} rows at a time", rows, N));
  if (!in.trains) {
    add("kl_reference", 0, "none: sampling only (leap eval)");
  } else if (!in.kl_reference) {
    add("kl_reference", 0, "none (rl.kl_beta = 0)");
  } else if (!in.kl_reference_bf16) {
    add("kl_reference", 4 * P + (cuda ? 2 * gemm : 0),
        cuda ? "a frozen fp32 copy of the weights and the bf16 compute copies of its matrices" : "a frozen fp32 copy of the weights");
  } else {
    // reference_policy.h: the matrices in bf16 and the vectors in fp32, one layer widened to fp32
    // and the LM head (or the embedding) with the final norm; on CUDA the GEMMs' bf16 copies of
    // the matrices in those two scratch buffers (a layer's and the LM head's).
    const uint64_t head = head_matrix + c.hidden_size;
    const uint64_t scratch = layout.layer_floats() + head;
    const uint64_t matrices = layout.decay_size();
    add("kl_reference",
        2 * matrices + 4 * (P - matrices) + 4 * scratch + (cuda ? 2 * (layer_matrices + head_matrix) : 0),
        fmt::format("a frozen copy of the weights (bf16 matrices, fp32 norms and biases), widened a "
                    "layer at a time into fp32 scratch "
                    "({:.2f} GiB{})",
                    static_cast<double>(4 * scratch) / (1ull << 30), cuda ? ", and its bf16 compute copies" : ""));
  }
  const uint64_t maxT = static_cast<uint64_t>(std::min<int64_t>(
      in.prompt_tokens + in.max_new_tokens, c.max_position_embeddings));
  const uint64_t bs = std::max<uint64_t>(1, std::min<uint64_t>(maxT, static_cast<uint64_t>(std::max(1, in.kv_block_tokens))));
  const backend::KvDtype kv = in.kv_bf16 ? backend::KvDtype::kBf16 : backend::KvDtype::kF32;
  // The decoding batch (sampler.batch_seqs) may exceed the micro-batch: its prompts are
  // prefilled a micro-batch at a time, inside the activations above, so only the cache grows.
  const uint64_t G = static_cast<uint64_t>(std::max(1, in.generation_batch_seqs > 0 ? in.generation_batch_seqs : in.micro_batch_seqs));
  if (in.generates)
    add("kv_cache",
        kv_cache_bytes(c, static_cast<int>(G), static_cast<int>(maxT), static_cast<int>(bs),
                       in.kv_keep_sequences, kv),
        fmt::format("{}, paged: {} blocks of {} positions ({} decoding + {} kept sequences of {}); "
                    "a group shares its prompt's blocks",
                    backend::kv_dtype_name(kv), (G + in.kv_keep_sequences) * ((maxT + bs - 1) / bs),
                    bs, G, in.kv_keep_sequences, maxT));
  else
    add("kv_cache", 0, "none: SFT generates nothing");
  const uint64_t rope = 2 * static_cast<uint64_t>(std::max<int64_t>(T, maxT)) * (c.head_dim / 2);
  // The sampler session's logits rows stay in backend memory (sampled where they are).
  uint64_t workspace = 4 * (rope + (in.generates ? G * V : 0));
  std::string note = in.generates ? "RoPE tables, the sampler's logits" : "RoPE tables";
  if (cuda) {
    // The GEMM operands rounded to bf16: slot 0 holds an input or an upstream gradient (the
    // widest: the gate|up gradient, o_proj's input or q_proj's gradient where H*D is wider
    // (Qwen3), or the LM head's one chunk of logit rows), slot 1 the other input of a weight
    // gradient.
    const uint64_t I = c.intermediate_size, C = c.hidden_size;
    const uint64_t HD = static_cast<uint64_t>(c.num_attention_heads) * c.head_dim;
    const uint64_t slot0 = std::max(N * std::max({2 * I, C, HD}), rows * V);
    const uint64_t slot1 = N * std::max({C, I, HD});
    workspace += (uint64_t{32} << 20) + 2 * slot0 + 2 * slot1;
    note += ", the cuBLASLt workspace (32 MiB), bf16 GEMM operands";
    if (in.masters_in_optimizer) {
      // Bf16Weights' fp32 staging for loading and reading the bf16 matrices (kStagingFloats).
      workspace += uint64_t{32} << 20;
      note += ", the bf16 weights' fp32 staging (32 MiB)";
    }
    if (in.grad_comm_bf16 && in.trains) {
      // NCCL's bf16 staging (mpi/grad_comm.h): one layer's gradient, at most 2^28 values.
      workspace += 2 * std::min<uint64_t>(ParameterLayout(c).layer_floats(), uint64_t{1} << 28);
      note += ", NCCL's bf16 gradient staging (one layer)";
    }
  }
  add("workspace", workspace, note);
  return plan;
}

}  // namespace leap::model
