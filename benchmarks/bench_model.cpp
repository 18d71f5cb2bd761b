// Google Benchmark programs for the policy on the CPU backend: one training step (forward,
// backward, AdamW), batched KV-cache sampling, and one group's samples of a shared prompt with
// and without the shared prefill, a rank's share of a turn in fixed batches against continuous
// batching, the KL reference's forward kept in fp32 and in bf16, at the configuration of issue 3:
// d=256, 4 layers, 8 heads (2 KV heads), T=256, B=8, byte vocabulary (262).
// After the benchmarks it prints the per-op split of a training step and of sampling, and the
// peak RSS.
// Threads: OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, or --threads=N (first argument).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "backend/blas_kernels.h"
#include "backend/cpu_backend.h"
#include "model/optimizer.h"
#include "model/reference_policy.h"
#include "model/sampler.h"
#include "timed_backend.h"

namespace leap::bench {
namespace {

constexpr int kB = 8, kT = 256, kPrompt = 32;

model::ModelConfig bench_config() {
  model::ModelConfig c;
  c.model_type = "llama";
  c.vocab_size = 262;
  c.hidden_size = 256;
  c.intermediate_size = 688;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.max_position_embeddings = 1024;
  return c;
}

model::TokenBatch bench_batch() {
  Rng rng(1);
  std::vector<std::vector<int32_t>> seqs(kB, std::vector<int32_t>(kT));
  for (auto& s : seqs)
    for (auto& t : s) t = static_cast<int32_t>(rng.below(256));
  return model::TokenBatch::from_sequences(seqs);
}

// One optimizer step: zero_grad, forward, backward of a masked mean log-likelihood, AdamW.
void train_step(model::Transformer& m, model::AdamW& opt, const model::TokenBatch& batch,
                std::vector<float>& lp, std::vector<float>& dlp) {
  m.zero_grad();
  if (!m.forward(batch, lp.data()).is_ok()) std::abort();
  m.backward(dlp.data());
  opt.step();
}

void BM_TrainStep(benchmark::State& state, int threads) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::AdamW opt(model::OptimConfig{.lr = 1e-4, .weight_decay = 0.1}, m);
  auto batch = bench_batch();
  std::vector<float> lp(static_cast<size_t>(kB) * kT), dlp(lp.size(), -1.0f / (kB * (kT - 1)));
  for (auto _ : state) train_step(m, opt, batch, lp, dlp);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(kB) * kT,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// block_tokens: positions per KV-cache block (sampler.kv_block_tokens); above kT, one block a
// sequence, the contiguous layout the CPU's decode attention gathers paged blocks into.
// max_batch, prefill_batch: Sampler::set_max_batch and set_prefill_batch (0: all kB at once).
void BM_Sample(benchmark::State& state, int threads, int block_tokens, int max_batch, int prefill_batch) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::Sampler sampler(m, nullptr);
  sampler.set_max_batch(max_batch);
  sampler.set_prefill_batch(prefill_batch);
  model::SamplerConfig sc;
  sc.max_new_tokens = kT - kPrompt;
  sc.stop_at_eos = false;
  sc.kv_block_tokens = block_tokens;
  // Every iteration prefills its prompts, as the PyTorch baseline does: nothing is kept from the
  // last one (which would share the same prompts' blocks).
  sc.reuse_kv = false;
  Rng prng(2);
  std::vector<std::vector<int32_t>> prompts(kB, std::vector<int32_t>(kPrompt));
  for (auto& p : prompts)
    for (auto& t : p) t = static_cast<int32_t>(prng.below(256));
  Rng rng(3);
  for (auto _ : state) {
    auto out = sampler.generate(prompts, sc, rng);
    if (!out) std::abort();
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["new_tokens/s"] = benchmark::Counter(
      static_cast<double>(kB) * (kT - kPrompt), benchmark::Counter::kIsIterationInvariantRate);
}

// One group's turn 1: kB samples of the same 512-token prompt, 64 new tokens each, its prefill
// shared (one prompt prefilled, its KV cache copied) or not (every copy prefilled).
void BM_SampleGroup(benchmark::State& state, int threads, bool share) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::Sampler sampler(m, nullptr);
  sampler.set_share_prefill(share);
  model::SamplerConfig sc;
  sc.max_new_tokens = 64;
  sc.stop_at_eos = false;
  Rng prng(2);
  std::vector<int32_t> prompt(512);
  for (auto& t : prompt) t = static_cast<int32_t>(prng.below(256));
  const std::vector<std::vector<int32_t>> prompts(kB, prompt);
  Rng rng(3);
  for (auto _ : state) {
    auto out = sampler.generate(prompts, sc, rng);
    if (!out) std::abort();
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["new_tokens/s"] = benchmark::Counter(static_cast<double>(kB) * 64,
                                                      benchmark::Counter::kIsIterationInvariantRate);
}

// A rank's share of a turn: two groups of 8 samples of a 64-token prompt, decoded 4 at a time
// (train.micro_batch_seqs in the demo), with completions of different lengths (24 byte values
// end one, so a completion stops after about 11 tokens on average, at most 160). Arms:
//  - fixed_batches: batches of 4 that each run until their longest completion ends (the rollout
//    before continuous batching);
//  - per_pull: the work arrives in pulls of 8 (two batches, as the streaming pipeline handed it
//    out before), each one generate() call whose 4 slots are refilled within the pull only;
//  - refilled_slots: one Sampler::Session for all of it, taking each pull's items into slots as
//    they free (the streaming pipeline's policy ranks now; generate() over all 16 is the same).
enum class Batching { kFixed, kPerPull, kSession };
void BM_ContinuousBatching(benchmark::State& state, int threads, Batching mode) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::Sampler sampler(m, nullptr);
  std::vector<int32_t> eos;
  for (int32_t id = 'a'; id < 'a' + 24; ++id) eos.push_back(id);
  sampler.set_eos_ids(eos);
  model::SamplerConfig sc;
  sc.max_new_tokens = 160;
  Rng prng(2);
  std::vector<std::vector<int32_t>> prompts;
  for (int g = 0; g < 2; ++g) {
    std::vector<int32_t> prompt(64);
    for (auto& t : prompt) t = static_cast<int32_t>(prng.below(256));
    for (int k = 0; k < 8; ++k) prompts.push_back(prompt);
  }
  constexpr size_t kSlots = 4;
  const size_t chunk = mode == Batching::kFixed ? kSlots : 2 * kSlots;
  double tokens = 0;
  uint64_t round = 0;
  for (auto _ : state) {
    std::vector<Rng> rngs;
    for (size_t i = 0; i < prompts.size(); ++i) rngs.emplace_back(round, i);
    ++round;
    if (mode == Batching::kSession) {
      auto session = sampler.open(sc, kSlots);
      size_t next = 0;
      while (next < prompts.size() || !session->idle()) {
        // A pull's items join as slots free, whichever pull brought them.
        while (next < prompts.size() && session->live() + session->waiting() < static_cast<int>(kSlots)) {
          if (!session->add(prompts[next], static_cast<int64_t>(next), rngs[next]).is_ok()) std::abort();
          ++next;
        }
        if (!session->step().is_ok()) std::abort();
        for (const auto& [tag, c] : session->take_finished()) tokens += static_cast<double>(c.tokens.size());
      }
    } else {
      sampler.set_max_batch(kSlots);
      for (size_t i = 0; i < prompts.size(); i += chunk) {
        std::vector<std::vector<int32_t>> batch(prompts.begin() + static_cast<long>(i),
                                                prompts.begin() + static_cast<long>(i + chunk));
        std::vector<Rng> brngs(rngs.begin() + static_cast<long>(i), rngs.begin() + static_cast<long>(i + chunk));
        auto out = sampler.generate(batch, sc, brngs);
        if (!out) std::abort();
        for (const auto& c : *out) tokens += static_cast<double>(c.tokens.size());
      }
    }
  }
  // The same seeds in every arm give the same completions: the same tokens per iteration.
  state.counters["new_tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
}

// A rank's second turn: 8 samples with distinct 384-token prompts answered with 48 tokens each
// (turn 1, not timed), then turn 2: each prompt + its answer + 64 feedback tokens, answered with
// 48 more, 4 sequences at a time. Arms: turn 2 prefilled in full (the rollout before KV reuse),
// or extending the KV cache each sample kept from turn 1 (sampler.reuse_kv).
void BM_LaterTurn(benchmark::State& state, int threads, bool reuse) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::Sampler sampler(m, nullptr);
  sampler.set_max_batch(4);
  sampler.set_context(384 + 48 + 64 + 48);  // turn 2's longest sequence, as the policy sizes it
  model::SamplerConfig sc;
  sc.max_new_tokens = 48;
  sc.stop_at_eos = false;
  sc.reuse_kv = reuse;
  Rng prng(4);
  auto random_tokens = [&](int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = static_cast<int32_t>(prng.below(256));
    return t;
  };
  std::vector<std::vector<int32_t>> prompts, feedback;
  for (int i = 0; i < 8; ++i) {
    prompts.push_back(random_tokens(384));
    feedback.push_back(random_tokens(64));
  }
  double tokens = 0;
  uint64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Rng> r1, r2;
    for (size_t i = 0; i < prompts.size(); ++i) {
      r1.emplace_back(round, i);
      r2.emplace_back(round + 1000, i);
    }
    ++round;
    sampler.forget_kept();
    auto turn1 = sampler.generate(prompts, sc, r1);
    if (!turn1) std::abort();
    std::vector<std::vector<int32_t>> turn2 = prompts;
    for (size_t i = 0; i < turn2.size(); ++i) {
      turn2[i].insert(turn2[i].end(), (*turn1)[i].tokens.begin(), (*turn1)[i].tokens.end());
      turn2[i].insert(turn2[i].end(), feedback[i].begin(), feedback[i].end());
    }
    state.ResumeTiming();
    auto out = sampler.generate(turn2, sc, r2);
    if (!out) std::abort();
    for (const auto& c : *out) tokens += static_cast<double>(c.tokens.size());
  }
  state.counters["new_tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["reused_positions"] =
      static_cast<double>(sampler.counts().reused_tokens) / static_cast<double>(round);
  state.counters["prefilled_tokens"] =
      static_cast<double>(sampler.counts().prefilled_tokens) / static_cast<double>(round);
}

// The KL reference's log-probs of one training batch (B=8, T=256), its weights kept in fp32 (one
// flat buffer, read in place) or in bf16 (each layer widened into an fp32 scratch first).
void BM_KlReference(benchmark::State& state, int threads, model::ReferenceDtype dtype) {
  backend::CpuBackend be(threads);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  auto ref = model::ReferencePolicy::copy_of(m, "bench", dtype);
  auto batch = bench_batch();
  std::vector<float> lp(static_cast<size_t>(kB) * kT);
  for (auto _ : state)
    if (!ref->logprobs(m, batch, lp.data()).is_ok()) std::abort();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(kB) * kT,
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["reference_MiB"] = static_cast<double>(ref->backend_floats()) * 4 / (1 << 20);
}

void register_benchmarks(int threads) {
  benchmark::RegisterBenchmark("BM_TrainStep", BM_TrainStep, threads)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(3.0)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Sample", BM_Sample, threads, 16, 0, 0)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(3.0)
      ->UseRealTime();
  // The paged layout's cost on the CPU (the decode attention gathers a row's blocks first)
  // beside one contiguous block a sequence.
  benchmark::RegisterBenchmark("BM_Sample_contiguous_kv", BM_Sample, threads, 1 << 20, 0, 0)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(3.0)
      ->UseRealTime();
  // A rank that trains one sequence at a time (train.micro_batch_seqs = 1, the Qwen configs):
  // its kB samples decoded one at a time (sampler.batch_seqs = 0) against together
  // (sampler.batch_seqs = kB), prefilled one at a time in both.
  for (auto [name, batch] : {std::pair{"BM_DecodingBatch/one_at_a_time", 1}, std::pair{"BM_DecodingBatch/together", kB}})
    benchmark::RegisterBenchmark(name, BM_Sample, threads, 16, batch, 1)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(3.0)
        ->UseRealTime();
  // Interleaved arms of one comparison: the same group with and without the shared prefill.
  for (bool share : {false, true})
    benchmark::RegisterBenchmark(share ? "BM_SampleGroup/shared_prefill" : "BM_SampleGroup/every_prefill",
                                 BM_SampleGroup, threads, share)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(3.0)
        ->UseRealTime();
  for (auto [name, mode] : {std::pair{"BM_ContinuousBatching/fixed_batches", Batching::kFixed},
                            std::pair{"BM_ContinuousBatching/per_pull", Batching::kPerPull},
                            std::pair{"BM_ContinuousBatching/refilled_slots", Batching::kSession}})
    benchmark::RegisterBenchmark(name, BM_ContinuousBatching, threads, mode)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(3.0)
        ->UseRealTime();
  for (auto [name, dtype] : {std::pair{"BM_KlReference/fp32", model::ReferenceDtype::kF32},
                             std::pair{"BM_KlReference/bf16", model::ReferenceDtype::kBf16}})
    benchmark::RegisterBenchmark(name, BM_KlReference, threads, dtype)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(3.0)
        ->UseRealTime();
  for (bool reuse : {false, true})
    benchmark::RegisterBenchmark(reuse ? "BM_LaterTurn/kept_kv" : "BM_LaterTurn/prefilled",
                                 BM_LaterTurn, threads, reuse)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(3.0)
        ->UseRealTime();
}

// Per-op split of a training step, timed through TimedBackend (after a warm-up step).
void print_op_split(int threads) {
  backend::CpuBackend cpu(threads);
  TimedBackend be(cpu);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::AdamW opt(model::OptimConfig{.lr = 1e-4}, m);
  auto batch = bench_batch();
  std::vector<float> lp(static_cast<size_t>(kB) * kT), dlp(lp.size(), -1.0f / (kB * (kT - 1)));
  train_step(m, opt, batch, lp, dlp);
  be.reset();
  const int steps = 3;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) train_step(m, opt, batch, lp, dlp);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double total = 0;
  for (double s : be.seconds) total += s;
  std::printf("\nper-op split of a training step (B=%d T=%d, mean of %d steps, %.1f ms wall, %.1f ms "
              "in ops):\n",
              kB, kT, steps, 1e3 * wall / steps, 1e3 * total / steps);
  for (size_t k = 0; k < be.seconds.size(); ++k)
    std::printf("  %-24s %8.2f ms  %5.1f%%\n", op_kind_name(static_cast<OpKind>(k)),
                1e3 * be.seconds[k] / steps, 100.0 * be.seconds[k] / total);
  std::printf("  %-24s %8.2f ms  %5.1f%%\n", "outside GEMMs", 1e3 * (total - be.seconds[0]) / steps,
              100.0 * (total - be.seconds[0]) / total);
  std::printf("  %-24s %8.2f ms  (the step's wall time not in any op)\n", "outside ops",
              1e3 * (wall - total) / steps);
}

// Per-op split of one generate() call (prefill + 224 decode steps for 8 sequences).
void print_sample_split(int threads) {
  backend::CpuBackend cpu(threads);
  TimedBackend be(cpu);
  model::Transformer m(bench_config(), be);
  m.init_random(1);
  model::Sampler sampler(m, nullptr);
  model::SamplerConfig sc;
  sc.max_new_tokens = kT - kPrompt;
  sc.stop_at_eos = false;
  std::vector<std::vector<int32_t>> prompts(kB, std::vector<int32_t>(kPrompt, 65));
  Rng rng(3);
  if (!sampler.generate(prompts, sc, rng)) std::abort();  // warm-up: allocates the cache
  be.reset();
  auto t0 = std::chrono::steady_clock::now();
  if (!sampler.generate(prompts, sc, rng)) std::abort();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double total = 0;
  for (double x : be.seconds) total += x;
  std::printf("\nper-op split of sampling (8 x %d new tokens, %.1f ms wall, %.1f ms in ops):\n",
              kT - kPrompt, 1e3 * wall, 1e3 * total);
  for (size_t k = 0; k < be.seconds.size(); ++k)
    std::printf("  %-24s %8.2f ms  %5.1f%%\n", op_kind_name(static_cast<OpKind>(k)),
                1e3 * be.seconds[k], 100.0 * be.seconds[k] / wall);
  std::printf("  %-24s %8.2f ms  %5.1f%%\n", "outside ops (sampling)", 1e3 * (wall - total),
              100.0 * (wall - total) / wall);
}

}  // namespace
}  // namespace leap::bench

int main(int argc, char** argv) {
  bool split = true;
  int threads = 0;  // 0: the OpenMP default (OMP_NUM_THREADS or all cores)
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else if (std::strcmp(argv[i], "--no_split") == 0)
      split = false;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  leap::bench::register_benchmarks(threads);
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (split) {
    leap::bench::print_op_split(threads);
    leap::bench::print_sample_split(threads);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("peak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
  // The kernels OpenBLAS chose decide the GEMMs' speed; a figure means little without them.
  std::printf("OpenBLAS kernels: %s\n", leap::backend::blas_core_name().c_str());
  const std::string blas = leap::backend::blas_kernel_warning();
  if (!blas.empty()) std::printf("warning: %s\n", blas.c_str());
  return 0;
}
