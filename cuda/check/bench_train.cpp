// `leap_gpu_check train`: one training step of the ~124M benchmark model (bench_model.h) on the
// CUDA backend — forward, log-probabilities, backward, global gradient norm, AdamW — as the
// policy replica runs it, at B sequences of T tokens. Reports ms per step, tokens/s and MFU:
// model FLOPs per token 6*P + 12*L*H*D*T (PaLM's count: matmuls forward and backward, plus
// attention scores and values without causal savings; H*D is the width attention works in, C
// for Llama and Qwen2, twice C for Qwen3-0.6B) over the GPU's dense bf16 peak.
// It also measures the device memory the model, optimizer state and step take (cudaMemGetInfo
// before the model and after the warm-up step) beside what leap plan predicts for them
// (model/memory_plan.h: every kind but the KV cache, the KL reference and the sampler's logits,
// which this step does not allocate). `--config=models/qwen2.5-coder-1.5b/config.json` runs that
// model's shapes with random weights instead of the ~124M model (at T = 2048: the issue's
// 1.5B-class step). `--masters=optimizer` runs it as optim.master_weights = optimizer does: the
// model keeps its matrices in bf16 only (cuda/bf16_weights.h), AdamW updates fp32 masters of all
// of them (one rank: the whole shard) and writes them back rounded; after the timed steps it
// checks that such a model's log-probabilities are those of an fp32 model holding the same
// values (the GEMMs read the same bf16 either way), and reports the largest difference.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "common/rng.h"
#include "cuda/check/bench_model.h"
#include "cuda/check/checks.h"
#include "cuda/cuda_backend.h"
#include "model/memory_plan.h"
#include "model/model_config.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::cuda::check {

Expected<JsonRecord> run_train(const CheckArgs& args) {
  LEAP_ASSIGN_OR_RETURN(long long B, args.integer("batch"));
  LEAP_ASSIGN_OR_RETURN(long long T, args.integer("seq"));
  LEAP_ASSIGN_OR_RETURN(long long steps, args.integer("steps"));
  if (steps < 1) return invalid_input("--steps must be at least 1 (the median of the timed steps)");
  LEAP_ASSIGN_OR_RETURN(double peak_tflops, args.number("peak_tflops"));
  const std::string& config_path = args.str("config");
  const std::string& masters_at = args.str("masters");
  if (masters_at != "replica" && masters_at != "optimizer")
    return invalid_input("--masters must be replica or optimizer, not '" + masters_at + "'");
  const bool bf16_matrices = masters_at == "optimizer";
  model::ModelConfig cfg = bench_model_config();
  if (!config_path.empty()) {
    LEAP_ASSIGN_OR_RETURN(cfg, model::read_model_config(config_path));
  }
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, size_t{32} << 20));
  CudaBackend be(*ctx);
  size_t free_before = 0, total_b = 0;
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaMemGetInfo(&free_before, &total_b);
  model::Transformer m(
      cfg, be, model::GradientBuffer::kFlat,
      bf16_matrices ? model::WeightStorage::kBf16Matrices : model::WeightStorage::kFp32);
  m.init_random(1);
  const size_t P = m.num_params();
  float* adam_m = be.alloc_floats(P);
  float* adam_v = be.alloc_floats(P);
  float* masters = nullptr;  // AdamW's fp32 masters beside bf16 matrices
  if (bf16_matrices) {
    masters = be.alloc_floats(P);
    be.copy(masters, m.params(), P);
  }

  Rng rng(7);
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(B), std::vector<int32_t>(T));
  for (auto& s : seqs)
    for (auto& t : s) t = static_cast<int32_t>(rng.next_u64() % cfg.vocab_size);
  const auto batch = model::TokenBatch::from_sequences(seqs);
  std::vector<float> logp(static_cast<size_t>(B * T)), dlogp(logp.size(), -1.0f / (B * T));

  auto step = [&](int t) {
    m.zero_grad();
    Status st = m.forward(batch, logp.data());
    LEAP_CHECK(st.is_ok(), st.message());
    m.backward(dlogp.data());
    const double norm = std::sqrt(be.sum_squares(m.grads(), P));
    const float scale = norm > 1.0 ? static_cast<float>(1.0 / norm) : 1.0f;
    be.adamw_update(masters ? masters : m.params(), adam_m, adam_v, m.grads(), P, 3e-4f, 0.9f,
                    0.95f, 1e-8f, 0.1f, scale, t);
    if (masters) be.copy(m.params(), masters, P);  // AdamW::publish_masters
    CUDA_CHECK(cudaStreamSynchronize(ctx->compute()));
  };
  step(1);  // warm-up: allocations, cuBLASLt plans, bf16 weight copies
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step(i + 2);
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                 1e3);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double L = cfg.num_hidden_layers;
  const double HD = static_cast<double>(cfg.num_attention_heads) * cfg.head_dim;
  const double flops_per_token =
      6.0 * static_cast<double>(P) + 12.0 * L * HD * static_cast<double>(T);
  const double tokens = static_cast<double>(B * T);
  const double tflops = flops_per_token * tokens / (med * 1e-3) / 1e12;
  size_t free_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  // What leap plan says this step holds (the cuBLASLt workspace came with the context, before
  // free_before: left out of both sides).
  model::PlanInput in;
  in.model = cfg;
  in.backend = "cuda";
  in.micro_batch_seqs = static_cast<int>(B);
  in.train_tokens = T;
  in.masters_in_optimizer = bf16_matrices;
  const model::MemoryPlan plan = model::plan_policy_rank(in);
  uint64_t planned = 0;
  for (const auto& item : plan.items)
    if (item.kind != "kv_cache" && item.kind != "kl_reference") planned += item.bytes;
  planned -= (uint64_t{32} << 20) + 4 * static_cast<uint64_t>(B) * cfg.vocab_size;  // workspace, sampler logits
  // The bf16 matrices against an fp32 model holding the same values: the same log-probabilities.
  double logp_diff = -1;
  if (bf16_matrices) {
    model::Transformer fp32(cfg, be);
    be.copy(fp32.params(), m.params(), P);
    std::vector<float> again(logp.size());
    Status st = m.forward(batch, logp.data());
    if (st.is_ok()) st = fp32.forward(batch, again.data());
    LEAP_CHECK(st.is_ok(), st.message());
    logp_diff = 0;
    for (size_t i = 0; i < logp.size(); ++i)
      logp_diff = std::max(logp_diff, std::fabs(double(logp[i]) - again[i]));
  }
  const double measured_gib = static_cast<double>(free_before - free_b) / (1 << 30);
  const double planned_gib = static_cast<double>(planned) / (1 << 30);
  JsonRecord r;
  r.set("params", static_cast<long long>(P))
      .set("batch", B)
      .set("seq", T)
      .set("step_ms", med)
      .set("step_ms_min", ms.front())
      .set("tokens_per_s", tokens / (med * 1e-3))
      .set("model_tflops", tflops)
      .set("mfu", tflops / peak_tflops)
      .set("peak_tflops_assumed", peak_tflops)
      .set("model", config_path.empty() ? std::string("bench_124m") : config_path)
      .set("device_memory_used_gib", static_cast<double>(total_b - free_b) / (1 << 30))
      .set("step_memory_gib", measured_gib)
      .set("plan_gib", planned_gib)
      .set("plan_over_measured", planned_gib / measured_gib)
      .set("gemm_plans", static_cast<long long>(be.gemm().plans()))
      .set("masters", masters_at);
  if (bf16_matrices) r.set("logp_max_abs_diff_vs_fp32_weights", logp_diff);
  std::fprintf(
      stderr,
      "train step: %.1fM params, B=%lld T=%lld: %.1f ms (%.0f tok/s), %.0f TFLOP/s, MFU %.1f%%; memory %.2f GiB, "
      "leap plan %.2f GiB\n",
      P / 1e6, B, T, med, tokens / (med * 1e-3), tflops, 100 * tflops / peak_tflops, measured_gib, planned_gib);
  be.free_floats(adam_m);
  be.free_floats(adam_v);
  be.free_floats(masters);
  return r;
}

}  // namespace leap::cuda::check
