// The frozen KL reference: its log-probs equal those of a separate model holding its weights,
// bit for bit, whatever the policy's weights have become; asking for them leaves the policy's
// own forward (and so its backward) as it was; the hash fingerprints the weights, the same for
// a copy and for the saved folder, different after an update; a folder of another shape is an
// error naming the file. A bf16 reference (widened a layer at a time) gives the log-probs of the
// same model with its matrices rounded to bf16, bit for bit, and the fp32 reference's exactly when
// they are bf16 already (a model shipped in bf16).
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu_backend.h"
#include "common/bf16.h"
#include "model/checkpoint.h"
#include "model/reference_policy.h"

namespace leap::model {
namespace {

ModelConfig config(int hidden = 16, bool qwen2 = false) {
  ModelConfig c;
  c.model_type = qwen2 ? "qwen2" : "llama";
  c.tie_word_embeddings = qwen2;  // qwen2: q/k/v biases and a tied LM head
  c.qkv_bias = qwen2;
  c.vocab_size = 50;
  c.hidden_size = hidden;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = hidden / 4;
  c.max_position_embeddings = 32;
  return c;
}

TokenBatch batch() {
  return TokenBatch::from_sequences({{1, 5, 9, 2, 7, 7, 3}, {4, 8, 1}});
}

TEST(ReferencePolicy, LogprobsAreTheReferenceWeightsNotThePolicys) {
  backend::CpuBackend be(1);
  Transformer policy(config(), be), frozen(config(), be);
  policy.init_random(1);
  frozen.init_random(1);
  auto ref = ReferencePolicy::copy_of(policy, "initial");
  policy.init_random(2);  // the policy moves on
  const TokenBatch b = batch();
  const size_t n = static_cast<size_t>(b.B) * static_cast<size_t>(b.T);
  std::vector<float> want(n), got(n), own(n), own_after(n);
  ASSERT_TRUE(frozen.forward(b, want.data()).is_ok());
  ASSERT_TRUE(policy.forward(b, own.data()).is_ok());
  ASSERT_TRUE(ref->logprobs(policy, b, got.data()).is_ok());
  EXPECT_EQ(got, want);
  EXPECT_NE(got, own);
  ASSERT_TRUE(policy.forward(b, own_after.data()).is_ok());
  EXPECT_EQ(own_after, own) << "the policy's weights are untouched";
}

TEST(ReferencePolicy, HashFingerprintsTheWeights) {
  backend::CpuBackend be(1);
  Transformer m(config(), be);
  m.init_random(3);
  auto a = ReferencePolicy::copy_of(m, "a");
  const std::string dir = ::testing::TempDir() + "leap_reference_policy";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(save_model(dir, m).is_ok());
  auto loaded = ReferencePolicy::load(dir, m);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  EXPECT_EQ((*loaded)->hash(), a->hash());
  EXPECT_EQ((*loaded)->source(), dir);
  EXPECT_EQ(a->hash().size(), 16u);
  m.params()[7] += 1e-3f;
  EXPECT_NE(ReferencePolicy::copy_of(m, "b")->hash(), a->hash());

  Transformer wide(config(32), be);
  auto other = ReferencePolicy::load(dir, wide);
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.status().message().find("model.safetensors"), std::string::npos)
      << other.status().message();
  EXPECT_NE(other.status().message().find("rl.kl_reference"), std::string::npos)
      << other.status().message();
}

// Rounds every matrix of `m` to bf16 in place (the norms and biases a bf16 reference keeps in fp32).
void round_weights(Transformer& m) {
  for (size_t i = 0; i < m.layout().decay_size(); ++i) m.params()[i] = bf16_to_f32(f32_to_bf16(m.params()[i]));
}

class Bf16Reference : public ::testing::TestWithParam<bool> {};

TEST_P(Bf16Reference, IsTheRoundedModelBitForBit) {
  backend::CpuBackend be(1);
  const ModelConfig cfg = config(16, GetParam());
  Transformer policy(cfg, be), rounded(cfg, be);
  policy.init_random(4, 0.3f);  // large weights: rounding to bf16 moves the log-probs visibly
  rounded.init_random(4, 0.3f);
  round_weights(rounded);
  auto ref = ReferencePolicy::copy_of(policy, "initial", ReferenceDtype::kBf16);
  ASSERT_EQ(ref->dtype(), ReferenceDtype::kBf16);
  auto full = ReferencePolicy::copy_of(policy, "initial", ReferenceDtype::kF32);
  const ParameterLayout& layout = policy.layout();
  const size_t head = static_cast<size_t>(cfg.vocab_size) * cfg.hidden_size + cfg.hidden_size;
  const size_t matrices = layout.decay_size(), vectors = policy.num_params() - matrices;
  EXPECT_EQ(ref->backend_floats(), matrices / 2 + vectors + layout.layer_floats() + head);
  EXPECT_EQ(full->backend_floats(), policy.num_params());

  const TokenBatch b = batch();
  const size_t n = static_cast<size_t>(b.B) * static_cast<size_t>(b.T);
  std::vector<float> want(n), got(n), fp32(n), own(n), own_after(n);
  ASSERT_TRUE(rounded.forward(b, want.data()).is_ok());
  ASSERT_TRUE(policy.forward(b, own.data()).is_ok());
  ASSERT_TRUE(ref->logprobs(policy, b, got.data()).is_ok());
  ASSERT_TRUE(full->logprobs(policy, b, fp32.data()).is_ok());
  EXPECT_EQ(got, want);
  EXPECT_NE(got, fp32) << "rounding these weights must show";
  ASSERT_TRUE(policy.forward(b, own_after.data()).is_ok());
  EXPECT_EQ(own_after, own) << "the policy's weights are untouched";
  // Twice in a row: the scratch is widened again, not left holding the last layer.
  ASSERT_TRUE(ref->logprobs(policy, b, got.data()).is_ok());
  EXPECT_EQ(got, want);
  // The hash is that of the values the forward reads.
  EXPECT_EQ(ref->hash(), ReferencePolicy::copy_of(rounded, "rounded")->hash());
  EXPECT_NE(ref->hash(), full->hash());
}

TEST_P(Bf16Reference, OfBf16WeightsIsTheFp32Reference) {
  backend::CpuBackend be(1);
  const ModelConfig cfg = config(16, GetParam());
  Transformer policy(cfg, be);
  policy.init_random(5, 0.3f);
  round_weights(policy);  // as a model loaded from a bf16 checkpoint
  auto ref = ReferencePolicy::copy_of(policy, "initial", ReferenceDtype::kBf16);
  auto full = ReferencePolicy::copy_of(policy, "initial", ReferenceDtype::kF32);
  EXPECT_EQ(ref->hash(), full->hash());
  const TokenBatch b = batch();
  const size_t n = static_cast<size_t>(b.B) * static_cast<size_t>(b.T);
  std::vector<float> got(n), want(n);
  ASSERT_TRUE(ref->logprobs(policy, b, got.data()).is_ok());
  ASSERT_TRUE(full->logprobs(policy, b, want.data()).is_ok());
  EXPECT_EQ(got, want);

  // Loaded from a folder a tensor at a time: the same weights, the same hash.
  const std::string dir = ::testing::TempDir() + "leap_reference_policy_bf16";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(save_model(dir, policy, DType::kBF16).is_ok());
  auto loaded = ReferencePolicy::load(dir, policy, ReferenceDtype::kBf16);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  EXPECT_EQ((*loaded)->dtype(), ReferenceDtype::kBf16);
  EXPECT_EQ((*loaded)->hash(), full->hash());
  std::vector<float> from_dir(n);
  ASSERT_TRUE((*loaded)->logprobs(policy, b, from_dir.data()).is_ok());
  EXPECT_EQ(from_dir, want);
}

INSTANTIATE_TEST_SUITE_P(LlamaAndTiedQwen2, Bf16Reference, ::testing::Bool());

TEST(ReferencePolicy, DtypeOption) {
  EXPECT_EQ(reference_dtype("auto", false), ReferenceDtype::kF32);
  EXPECT_EQ(reference_dtype("auto", true), ReferenceDtype::kBf16);
  EXPECT_EQ(reference_dtype("fp32", true), ReferenceDtype::kF32);
  EXPECT_EQ(reference_dtype("bf16", false), ReferenceDtype::kBf16);
}

}  // namespace
}  // namespace leap::model
