// The memory plan (model/memory_plan.h) against the CPU backend's real allocations, as glibc
// counts them (mallinfo2: bytes in use in every arena plus mmapped blocks), not through any
// bookkeeping of ours. The plan must predict the CHANGE in allocated bytes from one config to
// another within 10%: the model and optimizer appearing, the first training step, more tokens,
// a larger micro-batch, a generation batch's KV cache, a larger generation batch, one larger than
// the training micro-batch, a bf16 cache instead of an fp32 one, and the KL reference in fp32
// and in bf16; and a model built without a gradient (leap eval, ZeRO stage 2) holds its weights only.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "backend/cpu_backend.h"
#include "model/memory_plan.h"
#include "model/optimizer.h"
#include "model/reference_policy.h"
#include "model/sampler.h"
#include "model/transformer.h"
#include "test_model_configs.h"

namespace leap::model {
namespace {

int64_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

ModelConfig config() { return testing::small_config("llama", 512, 128, 352, 2, 512); }

PlanInput input(int B, int64_t T, int64_t prompt = 0, int64_t new_tokens = 0) {
  PlanInput in;
  in.model = config();
  in.micro_batch_seqs = B;
  in.train_tokens = T;
  in.prompt_tokens = prompt;
  in.max_new_tokens = new_tokens;
  return in;
}

int64_t bytes_of(const MemoryPlan& p, std::initializer_list<const char*> kinds) {
  int64_t sum = 0;
  for (const auto& item : p.items)
    for (const char* k : kinds)
      if (item.kind == k) sum += static_cast<int64_t>(item.bytes);
  return sum;
}

// A training step's activations: what forward + backward of a (B, T) batch leave allocated.
int64_t training(const MemoryPlan& p) { return bytes_of(p, {"activations", "logits"}); }

void train_step(Transformer& model, int B, int T) {
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(B), std::vector<int32_t>(static_cast<size_t>(T)));
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) seqs[b][t] = (7 * b + 3 * t + 1) % 500;
  const TokenBatch batch = TokenBatch::from_sequences(seqs);
  std::vector<float> lp(static_cast<size_t>(B) * T), dlp(lp.size(), -1.f / static_cast<float>(lp.size()));
  ASSERT_TRUE(model.forward(batch, lp.data()).ok());
  model.backward(dlp.data());
}

// A decoding batch (sampler.batch_seqs) of `batch` distinct prompts of `prompt_tokens`, so each
// is prefilled, `prefill` at a time (PolicyReplica's set_prefill_batch), sampled to
// max_new_tokens without stopping at EOS, with the settings *sc. Whether it generated.
bool generate_batch(Sampler& sampler, int batch, int prefill, int prompt_tokens, int max_new_tokens,
                    SamplerConfig* sc_out) {
  sampler.set_max_batch(batch);
  sampler.set_prefill_batch(prefill);
  SamplerConfig& sc = *sc_out;
  sc.temperature = 1.0;
  sc.max_new_tokens = max_new_tokens;
  sc.stop_at_eos = false;
  sc.batch_seqs = batch;
  Rng rng(3);
  std::vector<std::vector<int32_t>> prompts;
  for (int b = 0; b < batch; ++b) prompts.push_back(std::vector<int32_t>(static_cast<size_t>(prompt_tokens), 5 + b));
  return sampler.generate(prompts, sc, rng).has_value();
}

void expect_within_10pct(int64_t measured, int64_t planned, const char* what) {
  ASSERT_GT(planned, 0) << what;
  const double rel = static_cast<double>(measured - planned) / static_cast<double>(planned);
  EXPECT_LE(std::abs(rel), 0.10) << what << ": measured " << measured << " bytes, planned " << planned;
  std::printf("%-40s measured %10lld  planned %10lld  (%+.2f%%)\n", what, static_cast<long long>(measured),
              static_cast<long long>(planned), 100 * rel);
}

TEST(MemoryPlan, PredictsTheModelAndOptimizerAllocations) {
  backend::CpuBackend be(1);
  const int64_t before = heap_in_use();
  Transformer model(config(), be);
  AdamW opt(OptimConfig{}, model);
  const int64_t measured = heap_in_use() - before;
  const MemoryPlan plan = plan_policy_rank(input(2, 64));
  expect_within_10pct(measured, bytes_of(plan, {"weights", "master_weights", "gradients", "optimizer_state"}),
                      "weights, gradients, AdamW state");
}

// A model built without a gradient (leap eval's, and ZeRO stage 2's before its gradient streams
// into the shards) holds its weights and nothing else: the plan's weights without its gradients.
TEST(MemoryPlan, AModelWithoutAGradientHoldsItsWeightsOnly) {
  backend::CpuBackend be(1);
  int64_t before = heap_in_use();
  int64_t flat = 0;
  {
    Transformer model(config(), be);
    flat = heap_in_use() - before;
    ASSERT_NE(model.grads(), nullptr);
  }
  before = heap_in_use();
  Transformer model(config(), be, GradientBuffer::kNone);
  const int64_t none = heap_in_use() - before;
  EXPECT_EQ(model.grads(), nullptr);
  const MemoryPlan plan = plan_policy_rank(input(2, 64));
  expect_within_10pct(none, bytes_of(plan, {"weights", "master_weights"}), "weights, no gradient");
  expect_within_10pct(flat - none, bytes_of(plan, {"gradients"}), "the flat gradient");
}

TEST(MemoryPlan, PredictsTheChangeWithTokensAndMicroBatch) {
  backend::CpuBackend be(1);
  Transformer model(config(), be);
  model.init_random(1);
  int64_t last = heap_in_use();
  const MemoryPlan* previous = nullptr;
  const struct {
    int B, T;
    const char* what;
  } steps[] = {{2, 64, "first step (B=2, T=64)"}, {2, 160, "more tokens (T 64 -> 160)"},
               {5, 160, "larger micro-batch (B 2 -> 5)"}, {5, 320, "more tokens (T 160 -> 320)"}};
  std::vector<MemoryPlan> plans;
  plans.reserve(4);
  for (const auto& s : steps) {
    train_step(model, s.B, s.T);
    const int64_t now = heap_in_use();
    plans.push_back(plan_policy_rank(input(s.B, s.T)));
    // The RoPE tables grow with T too (the plan's workspace); at these sizes they are under 0.5%.
    const int64_t planned = training(plans.back()) - (previous ? training(*previous) : 0);
    expect_within_10pct(now - last, planned, s.what);
    last = now;
    previous = &plans.back();
  }
}

TEST(MemoryPlan, PredictsTheChangeWithTheLogitsChunk) {
  backend::CpuBackend be(1);
  Transformer model(config(), be);
  model.init_random(1);
  const uint64_t chunk = 300 * 512 * 4;  // 300 rows of logits
  model.set_logits_chunk_bytes(chunk);
  int64_t last = heap_in_use();
  std::vector<MemoryPlan> plans;
  plans.reserve(2);
  for (int T : {100, 400}) {  // N = 400 rows (2 chunks), then 1600 rows (6 chunks of 300)
    train_step(model, 4, T);
    const int64_t now = heap_in_use();
    PlanInput in = input(4, T);
    in.logits_chunk_bytes = chunk;
    plans.push_back(plan_policy_rank(in));
    EXPECT_EQ(bytes_of(plans.back(), {"logits"}), 2 * 4 * 300 * 512);
    const int64_t planned = training(plans.back()) - (plans.size() > 1 ? training(plans[0]) : 0);
    expect_within_10pct(now - last, planned, T == 100 ? "first step, chunks of 300 rows" : "T 100 -> 400, chunked");
    last = now;
  }
}

TEST(MemoryPlan, PredictsTheChangeWithActivationCheckpointing) {
  // Checkpointing on first (the small arena), then off: the arena grows by what the plan says
  // the per-layer activations of the other layers take.
  backend::CpuBackend be(1);
  Transformer model(config(), be);
  model.init_random(1);
  model.set_activation_checkpointing(true);
  int64_t last = heap_in_use();
  PlanInput in = input(4, 160);
  in.activation_checkpointing = true;
  const MemoryPlan on = plan_policy_rank(in);
  train_step(model, 4, 160);
  int64_t now = heap_in_use();
  expect_within_10pct(now - last, training(on), "first step, checkpointed (B=4, T=160)");
  last = now;
  model.set_activation_checkpointing(false);
  train_step(model, 4, 160);
  now = heap_in_use();
  in.activation_checkpointing = false;
  const MemoryPlan off = plan_policy_rank(in);
  expect_within_10pct(now - last, training(off) - training(on), "checkpointing on -> off");
  EXPECT_LT(training(on), training(off) * 3 / 4);
}

// Qwen3's per-head q/k norms keep their inputs and rstd for the backward, and decoding keeps
// q_proj's and k_proj's outputs apart: what a qwen3 rank allocates beyond the same shapes
// without the norms (llama) is predicted, for a training step and for a generation batch.
TEST(MemoryPlan, PredictsWhatQwen3sQkNormsAdd) {
  auto measure = [](const char* type, int64_t* step_bytes, int64_t* generation_bytes) {
    ModelConfig c = testing::small_config(type, 512, 128, 352, 2, 512);
    c.head_dim = 96;  // H * D = 384, wider than the model, as in Qwen3-0.6B
    backend::CpuBackend be(1);
    Transformer model(c, be);
    model.init_random(4);
    int64_t before = heap_in_use();
    train_step(model, 3, 96);
    *step_bytes = heap_in_use() - before;
    before = heap_in_use();
    Sampler sampler(model, nullptr);
    SamplerConfig sc;
    ASSERT_TRUE(generate_batch(sampler, 4, 1, 30, 20, &sc));
    *generation_bytes = heap_in_use() - before;
  };
  int64_t step3 = 0, gen3 = 0, step_llama = 0, gen_llama = 0;
  measure("qwen3", &step3, &gen3);
  measure("llama", &step_llama, &gen_llama);
  auto plan = [](const char* type, int B, int64_t T, int64_t prompt, int64_t new_tokens) {
    PlanInput in = input(B, T, prompt, new_tokens);
    in.model = testing::small_config(type, 512, 128, 352, 2, 512);
    in.model.head_dim = 96;
    in.generation_batch_seqs = 4;
    return plan_policy_rank(in);
  };
  const int64_t step_plan = training(plan("qwen3", 3, 96, 0, 0));
  expect_within_10pct(step3 - step_llama, step_plan - training(plan("llama", 3, 96, 0, 0)),
                      "qwen3's q/k norms in a training step");
  expect_within_10pct(step3, step_plan, "qwen3 training step");
  const int64_t kv3 = bytes_of(plan("qwen3", 1, 96, 30, 20), {"kv_cache"});
  const int64_t kv_llama = bytes_of(plan("llama", 1, 96, 30, 20), {"kv_cache"});
  EXPECT_GT(kv3, kv_llama);  // the decode scratch's q_lin, k_lin and rstd
  expect_within_10pct(gen3 - gen_llama, kv3 - kv_llama, "qwen3's q/k norms in decoding");
}

TEST(MemoryPlan, PredictsTheKvCacheOfAGenerationBatch) {
  backend::CpuBackend be(1);
  Transformer model(config(), be);
  model.init_random(2);
  // A training step larger than any prefill below first, so that generation adds only its cache.
  train_step(model, 6, 200);
  Sampler sampler(model, nullptr);
  SamplerConfig sc;
  sc.temperature = 1.0;
  sc.max_new_tokens = 60;
  sc.stop_at_eos = false;
  Rng rng(3);
  const int64_t before_generation = heap_in_use();
  int64_t last = before_generation;
  const MemoryPlan* previous = nullptr;
  std::vector<MemoryPlan> plans;
  plans.reserve(2);
  for (int B : {3, 6}) {
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(B), std::vector<int32_t>(40, 5));
    ASSERT_TRUE(sampler.generate(prompts, sc, rng).has_value());
    const int64_t now = heap_in_use();
    PlanInput pin = input(B, 100, 40, 60);
    pin.kv_keep_sequences = sc.kv_keep_sequences;  // the pool's room for kept sequences
    plans.push_back(plan_policy_rank(pin));
    const int64_t planned = bytes_of(plans.back(), {"kv_cache"}) - (previous ? bytes_of(*previous, {"kv_cache"}) : 0);
    expect_within_10pct(now - last, planned, B == 3 ? "KV cache of 3 sequences" : "KV cache 3 -> 6 sequences");
    last = now;
    previous = &plans.back();
  }
  // The same batch in a second sampler whose cache is bf16: its pool is half the fp32 one's,
  // its scratch the same. Both the bf16 cache and what bf16 saves are predicted.
  const int64_t fp32_total = last - before_generation;
  Sampler bf16_sampler(model, nullptr);
  sc.kv_cache_dtype = "bf16";
  std::vector<std::vector<int32_t>> prompts(6, std::vector<int32_t>(40, 5));
  ASSERT_TRUE(bf16_sampler.generate(prompts, sc, rng).has_value());
  PlanInput pin = input(6, 100, 40, 60);
  pin.kv_keep_sequences = sc.kv_keep_sequences;
  pin.kv_bf16 = true;
  const int64_t bf16_planned = bytes_of(plan_policy_rank(pin), {"kv_cache"});
  const int64_t bf16_measured = heap_in_use() - last;
  expect_within_10pct(bf16_measured, bf16_planned, "KV cache of 6 sequences, bf16");
  expect_within_10pct(fp32_total - bf16_measured, bytes_of(plans.back(), {"kv_cache"}) - bf16_planned,
                      "KV cache 6 sequences, fp32 -> bf16 saves");
}

// A decoding batch larger than the training micro-batch (sampler.batch_seqs): 8 sequences decode
// after training steps of 2, and their prompts are prefilled 2 at a time (PolicyReplica's
// set_prefill_batch), so generation adds the cache of 8 slots and nothing to the activations.
// Prefilling the 8 prompts at once would grow the training arena to 8 prompts' rows (about twice
// the cache here), which the plan does not count.
TEST(MemoryPlan, PredictsAGenerationBatchLargerThanTheMicroBatch) {
  backend::CpuBackend be(1);
  Transformer model(config(), be);
  model.init_random(2);
  train_step(model, 2, 100);
  Sampler sampler(model, nullptr);
  const int64_t before = heap_in_use();
  SamplerConfig sc;
  ASSERT_TRUE(generate_batch(sampler, 8, 2, 70, 30, &sc));
  PlanInput pin = input(2, 100, 70, 30);
  pin.generation_batch_seqs = sc.batch_seqs;
  pin.kv_keep_sequences = sc.kv_keep_sequences;
  const MemoryPlan plan = plan_policy_rank(pin);
  expect_within_10pct(heap_in_use() - before, bytes_of(plan, {"kv_cache"}),
                      "KV cache of 8 sequences, micro-batch 2");
  // The plan's activations are the micro-batch's, whatever the decoding batch.
  PlanInput same_batch = pin;
  same_batch.generation_batch_seqs = 0;
  EXPECT_EQ(bytes_of(plan, {"activations", "logits"}), bytes_of(plan_policy_rank(same_batch), {"activations", "logits"}));
  EXPECT_GT(bytes_of(plan, {"kv_cache"}), bytes_of(plan_policy_rank(same_batch), {"kv_cache"}));
}

// A rank of leap eval (built without a gradient or an optimizer, apps/rank_setup.h): its whole
// allocation, from before the model to after a generation batch, is the plan's total for
// PlanInput::trains false: the weights, the prefill's arena of a micro-batch of prompts, the KV
// cache of the decoding batch and the workspace.
TEST(MemoryPlan, PredictsAnEvaluatingRank) {
  backend::CpuBackend be(1);
  const int64_t before = heap_in_use();
  Transformer model(config(), be, GradientBuffer::kNone);
  model.init_random(2);
  Sampler sampler(model, nullptr);
  SamplerConfig sc;
  ASSERT_TRUE(generate_batch(sampler, 6, 2, 90, 60, &sc));
  PlanInput pin = input(2, 0, 90, 60);
  pin.trains = false;
  pin.generation_batch_seqs = sc.batch_seqs;
  pin.kv_keep_sequences = sc.kv_keep_sequences;
  const MemoryPlan plan = plan_policy_rank(pin);
  expect_within_10pct(heap_in_use() - before, static_cast<int64_t>(plan.total), "an evaluating rank, all of it");
  EXPECT_EQ(bytes_of(plan, {"gradients", "optimizer_state", "kl_reference"}), 0);
}

TEST(MemoryPlan, PredictsTheKlReferenceInFp32AndBf16) {
  // Eight layers, so that one layer's scratch is small beside the copy (as at 7B: 28 layers).
  backend::CpuBackend be(1);
  const ModelConfig cfg = testing::small_config("llama", 256, 128, 352, 8, 512);
  Transformer model(cfg, be);
  PlanInput in = input(2, 64);
  in.model = cfg;
  in.kl_reference = true;
  const int64_t fp32_planned = bytes_of(plan_policy_rank(in), {"kl_reference"});
  in.kl_reference_bf16 = true;
  const int64_t bf16_planned = bytes_of(plan_policy_rank(in), {"kl_reference"});
  int64_t before = heap_in_use();
  auto fp32 = ReferencePolicy::copy_of(model, "fp32", ReferenceDtype::kF32);
  const int64_t fp32_measured = heap_in_use() - before;
  before = heap_in_use();
  auto bf16 = ReferencePolicy::copy_of(model, "bf16", ReferenceDtype::kBf16);
  const int64_t bf16_measured = heap_in_use() - before;
  expect_within_10pct(fp32_measured, fp32_planned, "KL reference, fp32");
  expect_within_10pct(bf16_measured, bf16_planned, "KL reference, bf16 and its scratch");
  expect_within_10pct(fp32_measured - bf16_measured, fp32_planned - bf16_planned,
                      "KL reference, fp32 -> bf16 saves");
}

TEST(MemoryPlan, CountsTheCudaBackendsBf16CopiesAndKeepsCpuAttentionProbabilities) {
  PlanInput in = input(2, 64);
  const MemoryPlan cpu = plan_policy_rank(in);
  in.backend = "cuda";
  const MemoryPlan gpu = plan_policy_rank(in);
  // The GEMMs' bf16 copies, by hand: each layer's q, k, v, o, gate, up and down matrices and the
  // LM head; not the norms, nor an untied embedding (looked up in fp32 rows).
  const ModelConfig& m = in.model;
  const int64_t C = m.hidden_size, D = m.head_dim, H = m.num_attention_heads, KV = m.num_key_value_heads;
  const int64_t layer_matrices = H * D * C + 2 * KV * D * C + C * H * D + 3 * int64_t{m.intermediate_size} * C;
  const int64_t head = int64_t{m.vocab_size} * C;
  const int64_t gemm = m.num_hidden_layers * layer_matrices + head;
  EXPECT_EQ(bytes_of(cpu, {"weights"}), 0);
  EXPECT_EQ(bytes_of(gpu, {"weights"}), 2 * gemm);
  PlanInput untied = in;
  untied.model.tie_word_embeddings = !m.tie_word_embeddings;
  const MemoryPlan other = plan_policy_rank(untied);
  EXPECT_EQ(static_cast<int64_t>(other.parameters) - static_cast<int64_t>(gpu.parameters),
            (m.tie_word_embeddings ? 1 : -1) * head);
  EXPECT_EQ(bytes_of(other, {"weights"}), 2 * gemm) << "an untied embedding has no compute copy";
  // The CPU saves (B, H, T, T) probabilities per layer; CUDA only a logsumexp and a copy of out.
  EXPECT_EQ(attention_saved_floats("cpu", 2, 64, 4, 32), 2u * 4 * 64 * 64);
  EXPECT_EQ(attention_saved_floats("cuda", 2, 64, 4, 32), 2u * 64 * 4 + 2u * 64 * 4 * 32);
  in.kl_reference = true;
  EXPECT_EQ(bytes_of(plan_policy_rank(in), {"kl_reference"}), 4 * static_cast<int64_t>(gpu.parameters) + 2 * gemm);
  // bf16 on CUDA: the matrices in bf16 and the vectors in fp32, the fp32 scratch of a layer and
  // of the LM head with the final norm, and the GEMMs' bf16 copies of that scratch's matrices.
  in.kl_reference_bf16 = true;
  const ParameterLayout layout(in.model);
  const int64_t scratch = static_cast<int64_t>(layout.layer_floats()) + head + C;
  const int64_t matrices = static_cast<int64_t>(layout.decay_size());
  EXPECT_EQ(bytes_of(plan_policy_rank(in), {"kl_reference"}),
            2 * matrices + 4 * (static_cast<int64_t>(gpu.parameters) - matrices) + 4 * scratch +
                2 * (layer_matrices + head));
}

}  // namespace
}  // namespace leap::model
