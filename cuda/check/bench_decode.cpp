// `leap_gpu_check decode`: the sampler's engine at batch 64 on the ~124M benchmark model —
// prefill of the prompts, then one token per sequence per step through the KV cache.
//  - Device time per step: CUDA events on the compute stream around a step whose logits stay
//    on the device, so the full-vocabulary logits download (B x V fp32, about 13 MB at B = 64)
//    is timed on its own, and the host's step time (with the download, as the sampler runs it)
//    is reported beside both. The events span the stream, so time the device sits idle while
//    the host enqueues (a staged copy from pageable memory waits for the stream) is counted:
//    the figure is what the device delivers to this host loop, not the kernels' sum.
//  - The HBM bound of a step is the bytes it must really read over the GPU's bandwidth: every
//    weight once as its bf16 compute copy, plus each sequence's K and V history as the cache
//    stores it: bf16, the sampler's default on this backend (sampler.kv_cache_dtype = auto).
//    The figure is that bound's time over the device time.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

#include "common/rng.h"
#include "cuda/check/bench_model.h"
#include "cuda/check/checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
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
  // Positions: the prompt, the warm-up token, then the host-clock and the event-timed steps
  // (at least one each, however few --tokens asks for).
  const long long host_steps = std::max(1LL, steps / 2);
  const long long device_steps = std::max(1LL, steps - host_steps);
  const int maxT = static_cast<int>(prompt + 1 + host_steps + device_steps);
  // The sampler's paged layout and its cache dtype on this backend.
  const backend::KvDtype kv_dtype = backend::KvDtype::kBf16;
  model::KvCache cache(cfg, be, static_cast<int>(B), maxT, 16, 0, kv_dtype);
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
  // Half the steps as the sampler runs them (host clock, logits downloaded), half with the
  // logits left on the device between two events; the download timed alone with events.
  const auto t0 = std::chrono::steady_clock::now();
  for (long long i = 0; i < host_steps; ++i) {
    next_tokens();
    m.decode(tokens.data(), slots.data(), static_cast<int>(B), cache, logits.data());
  }
  const double host_step_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      static_cast<double>(host_steps);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> device_ms;
  for (long long i = 0; i < device_steps; ++i) {
    next_tokens();
    CUDA_CHECK(cudaEventRecord(e0, ctx->compute()));
    m.decode(tokens.data(), slots.data(), static_cast<int>(B), cache, nullptr);
    CUDA_CHECK(cudaEventRecord(e1, ctx->compute()));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    device_ms.push_back(ms);
  }
  std::sort(device_ms.begin(), device_ms.end());
  const double step_ms = device_ms[device_ms.size() / 2];
  // The download alone: the same B x V floats from a device buffer to the same host vector.
  float* dev_logits = be.alloc_floats(logits.size());
  std::vector<double> download_ms;
  for (int i = 0; i < 5; ++i) {
    CUDA_CHECK(cudaEventRecord(e0, ctx->compute()));
    be.download(logits.data(), dev_logits, logits.size());
    CUDA_CHECK(cudaEventRecord(e1, ctx->compute()));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    download_ms.push_back(ms);
  }
  be.free_floats(dev_logits);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(download_ms.begin(), download_ms.end());
  const double logits_ms = download_ms[download_ms.size() / 2];
  // Bytes a step must read: bf16 weights once, and the mean K/V history of every sequence as
  // the cache stores it. Positions grow by one per step over prompt + 1 .. + steps + 1.
  const double kv_elem_bytes = static_cast<double>(backend::kv_dtype_bytes(kv_dtype));
  const double weight_bytes = 2.0 * static_cast<double>(m.num_params());
  const double mean_len = static_cast<double>(prompt) + 1.0 + static_cast<double>(steps) / 2.0;
  const double kv_bytes = 2.0 * kv_elem_bytes * static_cast<double>(B) * mean_len *
                          cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim;
  const double bound_ms = (weight_bytes + kv_bytes) / (hbm_tb_s * 1e12) * 1e3;
  JsonRecord r;
  r.set("batch", B)
      .set("prompt", prompt)
      .set("steps", steps)
      .set("step_ms", step_ms)
      .set("step_ms_source", "CUDA events, median, logits left on the device")
      .set("logits_download_ms", logits_ms)
      .set("host_step_ms_with_download", host_step_ms)
      .set("tokens_per_s", static_cast<double>(B) / (step_ms * 1e-3))
      .set("bytes_read_per_step", weight_bytes + kv_bytes)
      .set("weight_bytes_bf16", weight_bytes)
      .set("kv_bytes", kv_bytes)
      .set("kv_cache_dtype", backend::kv_dtype_name(kv_dtype))
      .set("hbm_bound_ms", bound_ms)
      .set("fraction_of_hbm_bound", bound_ms / step_ms)
      .set("hbm_tb_s_assumed", hbm_tb_s);
  std::fprintf(stderr,
               "decode: batch %lld, device %.3f ms/step (%.0f tok/s), logits download %.3f ms, "
               "host step with download %.3f ms; reads %.1f MB/step (KV %s %.1f MB): HBM "
               "bound %.3f ms, %.1f%% of it\n",
               B, step_ms, B / (step_ms * 1e-3), logits_ms, host_step_ms,
               (weight_bytes + kv_bytes) / 1e6, backend::kv_dtype_name(kv_dtype), kv_bytes / 1e6,
               bound_ms, 100 * bound_ms / step_ms);
  return r;
}

}  // namespace leap::cuda::check
