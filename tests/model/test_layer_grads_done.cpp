// Transformer::set_layer_grads_done, which the NCCL reducer relies on to reduce a layer's
// gradients while the backward goes on: it is called once per layer, from L-1 down to 0, and at
// each call that layer's parameter gradients already hold their final values (nothing later in
// the backward writes them), on a model with biases and untied embeddings. And GradientStream
// (ZeRO stage 2's way out of the backward): the compact buffers it receives, put back in the
// flat layout by tensor name, sum to the flat gradient of the same backward passes, exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "common/rng.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::model {
namespace {

ModelConfig biased_config() {
  ModelConfig c;
  c.model_type = "llama";
  c.vocab_size = 40;
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.max_position_embeddings = 32;
  c.qkv_bias = true;
  c.o_bias = true;
  return c;
}

TEST(LayerGradsDone, CalledPerLayerWhenItsGradientsAreFinal) {
  const ModelConfig c = biased_config();
  backend::CpuBackend be(1);
  Transformer m(c, be);
  m.init_random(3, 0.2f);
  Rng rng(4);
  std::vector<std::vector<int32_t>> seqs = {std::vector<int32_t>(11), std::vector<int32_t>(7)};
  for (auto& s : seqs)
    for (auto& t : s) t = static_cast<int32_t>(rng.next_u64() % 40);
  const TokenBatch batch = TokenBatch::from_sequences(seqs);
  std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), dlp(lp.size());
  for (auto& x : dlp) x = static_cast<float>(rng.normal());
  ASSERT_TRUE(m.forward(batch, lp.data()).is_ok());

  std::vector<int> order;
  std::vector<std::vector<float>> at_call(c.num_hidden_layers);
  m.set_layer_grads_done([&](int l) {
    order.push_back(l);
    at_call[l].assign(m.grads(), m.grads() + m.num_params());  // host memory on the CPU
  });
  m.zero_grad();
  m.backward(dlp.data());
  m.set_layer_grads_done({});

  EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
  for (const auto& t : m.layout().tensors()) {
    const std::string prefix = "model.layers.";
    if (t.name.compare(0, prefix.size(), prefix) != 0) continue;
    const int l = std::stoi(t.name.substr(prefix.size()));
    double norm = 0;
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
      ASSERT_EQ(at_call[l][i], m.grads()[i]) << t.name << " changed after its layer was reported";
      norm += static_cast<double>(m.grads()[i]) * m.grads()[i];
    }
    EXPECT_GT(norm, 0.0) << t.name << " has no gradient: the check would be vacuous";
  }
}

// Puts each compact buffer back into a flat-layout sum: a layer's buffer holds that layer's
// tensors back to back in layout order, the rest buffer the tensors outside the layers.
// Like ShardedGradients, it hands back a buffer of its own in turn with the model's, so the model
// must write each layer where it is told.
class FlatSum final : public GradientStream {
 public:
  explicit FlatSum(const ParameterLayout& layout)
      : layout_(layout), sum_(layout.total(), 0.0f), spare_(layout.layer_floats(), 0.0f), other_(spare_.data()) {}
  void attach() override { other_ = spare_.data(), handed_ = nullptr; }
  void clear() override { std::fill(sum_.begin(), sum_.end(), 0.0f); }
  float* layer_done(int l, float* buf) override {
    calls.push_back(l);
    if (handed_ != nullptr) {
      EXPECT_EQ(buf, handed_) << "layer " << l << " was not written where the stream said";
    }
    take(buf, "model.layers." + std::to_string(l) + ".", true);
    std::swap(buf, other_);
    return handed_ = buf;
  }
  void rest_done(float* buf) override {
    calls.push_back(-1);
    take(buf, "model.layers.", false);
  }
  std::vector<int> calls;
  const std::vector<float>& sum() const { return sum_; }

 private:
  void take(float* buf, const std::string& prefix, bool inside) {
    size_t at = 0;
    for (const auto& t : layout_.tensors()) {
      if (t.name.starts_with(prefix) != inside) continue;
      for (size_t i = 0; i < t.numel; ++i) {
        sum_[t.offset + i] += buf[at + i];
        buf[at + i] = 0.0f;  // as the contract asks
      }
      at += t.numel;
    }
  }
  const ParameterLayout& layout_;
  std::vector<float> sum_, spare_;
  float* other_;            // the buffer not with the model
  float* handed_ = nullptr;  // the one it was last told to write
};

TEST(GradientStream, CompactBuffersSumToTheFlatGradient) {
  for (bool tied : {false, true}) {
    ModelConfig c = biased_config();
    c.tie_word_embeddings = tied;
    backend::CpuBackend be(1);
    Transformer flat(c, be), streamed(c, be);
    flat.init_random(3, 0.2f);
    streamed.init_random(3, 0.2f);
    FlatSum stream(streamed.layout());
    streamed.set_gradient_stream(&stream);
    EXPECT_EQ(streamed.grads(), nullptr);
    flat.zero_grad();
    streamed.zero_grad();
    Rng rng(9);
    for (int pass = 0; pass < 2; ++pass) {  // two micro-batches: the stream's receiver sums them
      std::vector<std::vector<int32_t>> seqs = {std::vector<int32_t>(9 + pass), std::vector<int32_t>(5)};
      for (auto& s : seqs)
        for (auto& t : s) t = static_cast<int32_t>(rng.next_u64() % 40);
      const TokenBatch batch = TokenBatch::from_sequences(seqs);
      std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), dlp(lp.size());
      for (auto& x : dlp) x = static_cast<float>(rng.normal());
      for (Transformer* m : {&flat, &streamed}) {
        ASSERT_TRUE(m->forward(batch, lp.data()).is_ok());
        m->backward(dlp.data());
      }
    }
    EXPECT_EQ(stream.calls, (std::vector<int>{2, 1, 0, -1, 2, 1, 0, -1}));
    std::vector<float> each_pass(stream.sum());
    double norm = 0;
    for (size_t i = 0; i < flat.num_params(); ++i) {
      // Untied, every float gets one term per pass either way: equal to the last bit. Tied, the
      // embedding's floats get two per pass (LM head, then embedding), added in another order
      // ((lm1 + emb1) + lm2 + emb2 against (lm1 + emb1) + (lm2 + emb2)): equal to rounding.
      if (tied) {
        ASSERT_NEAR(each_pass[i], flat.grads()[i], 1e-6 * std::max(1.0f, std::fabs(flat.grads()[i]))) << "float " << i;
      } else {
        ASSERT_EQ(each_pass[i], flat.grads()[i]) << "float " << i;
      }
      norm += static_cast<double>(flat.grads()[i]) * flat.grads()[i];
    }
    EXPECT_GT(norm, 0.0);
    // A pass over no tokens hands over zeros, in the backward's order.
    stream.calls.clear();
    streamed.backward_nothing();
    EXPECT_EQ(stream.calls, (std::vector<int>{2, 1, 0, -1}));
    EXPECT_EQ(stream.sum(), each_pass);
    // Back to the flat buffer (the model ends a backward over 3 layers holding the stream's
    // buffer, and frees its own), then the stream again: it must hand out only live buffers.
    streamed.set_gradient_stream(nullptr);
    ASSERT_NE(streamed.grads(), nullptr);
    streamed.set_gradient_stream(&stream);
    stream.calls.clear();
    streamed.backward_nothing();
    EXPECT_EQ(stream.calls, (std::vector<int>{2, 1, 0, -1}));
    EXPECT_EQ(stream.sum(), each_pass);
  }
}

}  // namespace
}  // namespace leap::model
