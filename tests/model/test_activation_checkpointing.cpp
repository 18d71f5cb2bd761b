// Per-layer activation checkpointing (Transformer::set_activation_checkpointing) recomputes each
// layer in the backward from its saved input, with the same ops on the same inputs, so the
// log-probs and every gradient are bit-identical to the run that keeps all activations; the
// KV-cache prefill, which copies each layer's keys and values as the layer finishes, samples the
// same tokens. A layer recomputed from the wrong input, or a slot read before it is recomputed,
// changes the gradients, so EXPECT_EQ can fail.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu_backend.h"
#include "model/sampler.h"
#include "model/token_batch.h"
#include "model/transformer.h"
#include "test_model_configs.h"

namespace leap::model {
namespace {

ModelConfig config(const char* type) {
  return testing::small_config(type, 61, 32, 48, 3, 64);
}

struct Outcome {
  std::vector<float> logprobs, grads;
  std::vector<std::vector<int32_t>> samples;
};

Outcome run(bool checkpointing, int threads, const char* type) {
  backend::CpuBackend be(threads);
  Transformer m(config(type), be);
  m.init_random(9, 0.3f);
  m.set_activation_checkpointing(checkpointing);
  std::vector<std::vector<int32_t>> seqs;
  for (int b = 0; b < 3; ++b) {
    std::vector<int32_t> s;
    for (int t = 0; t < 21 - 4 * b; ++t) s.push_back((13 * b + 5 * t + 1) % 61);
    seqs.push_back(s);
  }
  const TokenBatch tb = TokenBatch::from_sequences(seqs);
  Outcome r;
  r.logprobs.resize(static_cast<size_t>(tb.B) * tb.T);
  EXPECT_TRUE(m.forward(tb, r.logprobs.data()).ok());
  std::vector<float> dlp(r.logprobs.size());
  for (size_t i = 0; i < dlp.size(); ++i) dlp[i] = 0.05f * static_cast<float>(static_cast<int>(i % 5) - 2);
  m.zero_grad();
  m.backward(dlp.data());
  r.grads.assign(m.grads(), m.grads() + m.num_params());
  Sampler sampler(m, nullptr);
  SamplerConfig sc;
  sc.max_new_tokens = 12;
  sc.stop_at_eos = false;
  Rng rng(4);
  auto gen = sampler.generate({{3, 4, 5}, {7, 8, 9, 10, 11}}, sc, rng);
  EXPECT_TRUE(gen.has_value());
  for (const auto& c : *gen) r.samples.push_back(c.tokens);
  return r;
}

TEST(ActivationCheckpointing, GradientsAndSamplesAreBitIdentical) {
  // qwen3: the q/k norms' inputs and rstd are recomputed too.
  for (const char* type : {"qwen2", "qwen3"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(type);
      const Outcome kept = run(false, threads, type), ckpt = run(true, threads, type);
      EXPECT_EQ(kept.logprobs, ckpt.logprobs) << threads << " threads";
      EXPECT_EQ(kept.grads, ckpt.grads) << threads << " threads";
      EXPECT_EQ(kept.samples, ckpt.samples) << threads << " threads";
      // The gradient is not trivially zero (the comparison would then prove nothing).
      double norm = 0;
      for (float g : kept.grads) norm += static_cast<double>(g) * g;
      EXPECT_GT(norm, 1e-6);
    }
}

}  // namespace
}  // namespace leap::model
