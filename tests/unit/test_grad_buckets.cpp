// The NCCL reducer's bucket plan (mpi/grad_buckets.h), checked on the CPU: each layer's ranges
// are exactly the tensors named for that layer, no two buckets overlap, and the layers plus the
// uncovered rest tile the flat gradient exactly once — for tied and untied embeddings and with
// biases, where the layer tensors are interleaved with others in the layout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi/grad_buckets.h"

namespace leap::mpi {
namespace {

model::ModelConfig config(bool tied, bool biases) {
  model::ModelConfig c;
  c.model_type = biases ? "qwen2" : "llama";
  c.vocab_size = 50;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  c.qkv_bias = biases;
  return c;
}

TEST(GradBuckets, LayersAndRestTileTheGradientOnce) {
  for (bool tied : {true, false}) {
    for (bool biases : {false, true}) {
      const model::ModelConfig c = config(tied, biases);
      const model::ParameterLayout layout(c);
      std::vector<int> owner(layout.total(), -2);  // -2: unassigned, -1: rest, l: layer l
      std::vector<FloatRange> taken;
      for (int l = c.num_hidden_layers - 1; l >= 0; --l) {
        for (const auto& [off, n] : layout.layer_ranges(l)) {
          for (size_t i = off; i < off + n; ++i) {
            ASSERT_EQ(owner[i], -2) << "float " << i << " in two buckets";
            owner[i] = l;
          }
          taken.emplace_back(off, n);
        }
      }
      for (const auto& [off, n] : uncovered_ranges(taken, layout.total())) {
        for (size_t i = off; i < off + n; ++i) {
          ASSERT_EQ(owner[i], -2) << "rest overlaps a layer at " << i;
          owner[i] = -1;
        }
      }
      // Every float is covered, and each tensor went to the bucket its name says.
      for (const auto& t : layout.tensors()) {
        const std::string prefix = "model.layers.";
        const int want = t.name.compare(0, prefix.size(), prefix) == 0
                             ? std::stoi(t.name.substr(prefix.size()))
                             : -1;
        for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
          ASSERT_EQ(owner[i], want) << t.name << " (tied " << tied << ", biases " << biases << ")";
        }
      }
      for (size_t i = 0; i < owner.size(); ++i)
        ASSERT_NE(owner[i], -2) << "float " << i << " in no bucket";
    }
  }
}

TEST(GradBuckets, UncoveredRangesByHand) {
  EXPECT_EQ(uncovered_ranges({{2, 3}, {8, 2}}, 12),
            (std::vector<FloatRange>{{0, 2}, {5, 3}, {10, 2}}));
  EXPECT_EQ(uncovered_ranges({{0, 12}}, 12), std::vector<FloatRange>{});
  EXPECT_EQ(uncovered_ranges({}, 5), (std::vector<FloatRange>{{0, 5}}));
  EXPECT_EQ(uncovered_ranges({{6, 2}, {0, 3}}, 8), (std::vector<FloatRange>{{3, 3}}));
}

}  // namespace
}  // namespace leap::mpi
