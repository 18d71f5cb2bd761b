// `leap_gpu_check decode`: the sampler's engine at batch 64 on the ~124M benchmark model —
// prefill of the prompts, then one token per sequence per step through the KV cache, logits to
// the host each step as the sampler needs them. The HBM bound of a step is the least it must
// read: every weight once in bf16 plus each sequence's K and V history in bf16, over the GPU's
// bandwidth; the figure is that bound's time over the measured time.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

#include "common/rng.h"
#include "cuda/check/bench_model.h"
#include "cuda/check/checks.h"
#include "cuda/cuda_backend.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::cuda::check {

Expected<JsonRecord> run_decode(const CheckArgs& args) {
  LEAP_ASSIGN_OR_RETURN(long long B, args.integer("batch"));
  LEAP_ASSIGN_OR_RETURN(long long prompt, args.integer("prompt"));
  LEAP_ASSIGN_OR_RETURN(long long steps, args.integer("tokens"));
  LEAP_ASSIGN_OR_RETURN(double hbm_tb_s, args.number("hbm_tb_s"));
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, size_t{32} << 20));
  CudaBackend be(*ctx);
  const model::ModelConfig cfg = bench_model_config();
  model::Transformer m(cfg, be);
  m.init_random(2);
  const int maxT = static_cast<int>(prompt + steps + 1);
  model::KvCache cache(cfg, be, static_cast<int>(B), maxT);
  Rng rng(3);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(B), std::vector<int32_t>(prompt));
  for (auto& s : prompts)
    for (auto& t : s) t = static_cast<int32_t>(rng.next_u64() % cfg.vocab_size);
  const size_t V = static_cast<size_t>(cfg.vocab_size);
  std::vector<float> logits(static_cast<size_t>(B) * V);
  LEAP_RETURN_IF_ERROR(m.prefill(model::TokenBatch::from_sequences(prompts), cache, logits.data()));
  std::vector<int32_t> tokens(static_cast<size_t>(B)), slots(static_cast<size_t>(B));
  std::iota(slots.begin(), slots.end(), 0);
  auto next_tokens = [&] {
    for (auto& t : tokens) t = static_cast<int32_t>(rng.next_u64() % cfg.vocab_size);
  };
  next_tokens();
  m.decode(tokens.data(), slots.data(), static_cast<int>(B), cache, logits.data());  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    next_tokens();
    m.decode(tokens.data(), slots.data(), static_cast<int>(B), cache, logits.data());
  }
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double step_ms = total_s * 1e3 / static_cast<double>(steps);
  // Least bytes per step: bf16 weights once, and the mean K/V history of every sequence in bf16.
  const double weight_bytes = 2.0 * static_cast<double>(m.num_params());
  const double mean_len = static_cast<double>(prompt) + 1.0 + static_cast<double>(steps) / 2.0;
  const double kv_bytes = 2.0 * 2.0 * static_cast<double>(B) * mean_len * cfg.num_hidden_layers *
                          cfg.num_key_value_heads * cfg.head_dim;
  const double bound_ms = (weight_bytes + kv_bytes) / (hbm_tb_s * 1e12) * 1e3;
  JsonRecord r;
  r.set("batch", B)
      .set("prompt", prompt)
      .set("steps", steps)
      .set("step_ms", step_ms)
      .set("tokens_per_s", static_cast<double>(B) / (step_ms * 1e-3))
      .set("hbm_bound_ms", bound_ms)
      .set("fraction_of_hbm_bound", bound_ms / step_ms)
      .set("hbm_tb_s_assumed", hbm_tb_s);
  std::fprintf(stderr,
               "decode: batch %lld, %.3f ms/step (%.0f tok/s); HBM bound %.3f ms: %.1f%% of it\n",
               B, step_ms, B / (step_ms * 1e-3), bound_ms, 100 * bound_ms / step_ms);
  return r;
}

}  // namespace leap::cuda::check
