// Transformer::set_layer_grads_done, which the NCCL reducer relies on to reduce a layer's
// gradients while the backward goes on: it is called once per layer, from L-1 down to 0, and at
// each call that layer's parameter gradients already hold their final values (nothing later in
// the backward writes them), on a model with biases and untied embeddings.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "common/rng.h"
#include "model/token_batch.h"
#include "model/transformer.h"

namespace leap::model {
namespace {

TEST(LayerGradsDone, CalledPerLayerWhenItsGradientsAreFinal) {
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

}  // namespace
}  // namespace leap::model
