// The frozen KL reference: its log-probs equal those of a separate model holding its weights,
// bit for bit, whatever the policy's weights have become; asking for them leaves the policy's
// own forward (and so its backward) as it was; the hash fingerprints the weights, the same for
// a copy and for the saved folder, different after an update; a folder of another shape is an
// error naming the file.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu_backend.h"
#include "model/checkpoint.h"
#include "model/reference_policy.h"

namespace leap::model {
namespace {

ModelConfig config(int hidden = 16) {
  ModelConfig c;
  c.model_type = "llama";
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

}  // namespace
}  // namespace leap::model
