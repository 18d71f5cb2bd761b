// DESIGN.md step 6 on the real CPU policy: four replicas, each training on a quarter of a batch
// (global normaliser, gradients summed over MPI), end with the same parameters as one replica
// that trains on the whole batch alone, for every loss aggregation mode, and the replicas stay
// bit-identical. Also: generation does not depend on which rank or batch a sample lands in.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "backend/cpu_backend.h"
#include "model/byte_tokenizer.h"
#include "mpi/grad_reduce.h"
#include "mpi/policy_replica.h"

namespace leap::mpi {
namespace {

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.vocab_size = 262;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 128;
  c.model_type = "qwen2";  // biases on q, k, v only
  c.qkv_bias = true;
  return c;
}

// A fixed batch of 12 samples with varied lengths, advantages and mini-batches.
std::vector<TrainSample> make_batch(int mini_batches) {
  Rng rng(11);
  std::vector<TrainSample> out;
  for (int i = 0; i < 12; ++i) {
    TrainSample s;
    int prompt = 3 + static_cast<int>(rng.below(6)), completion = 2 + static_cast<int>(rng.below(9));
    for (int t = 0; t < prompt + completion; ++t) s.tokens.push_back(static_cast<int32_t>(rng.below(256)));
    s.prompt_len = prompt;
    for (int j = 0; j < completion; ++j) s.old_logprobs.push_back(static_cast<float>(-5.6 + 0.3 * rng.normal()));
    s.advantage = static_cast<float>(rng.uniform(-1, 1));
    s.mini_batch = i % mini_batches;
    out.push_back(std::move(s));
  }
  return out;
}

struct Replica {
  backend::CpuBackend be{1};
  model::Transformer model{tiny_config(), be};
  model::ByteTokenizer tok;
  model::AdamW opt;
  PolicyReplica engine;
  explicit Replica(rl::LossAggregation agg)
      : opt(model::OptimConfig{.lr = 1e-2, .grad_clip = 1.0}, model), engine(model, tok, opt, options(agg)) {
    model.init_random(5);
  }
  static PolicyReplicaOptions options(rl::LossAggregation agg) {
    PolicyReplicaOptions o;
    o.loss.aggregation = agg;
    o.loss.loss_norm_tokens = 16;
    o.micro_batch_seqs = 2;  // several micro-batches per rank
    o.sampler.max_new_tokens = 6;
    o.sampler.stop_at_eos = false;
    return o;
  }
};

class PolicyUpdate : public ::testing::TestWithParam<rl::LossAggregation> {};

TEST_P(PolicyUpdate, FourRanksEqualOneRankOnTheWholeBatch) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto batch = make_batch(/*mini_batches=*/2);
  TrainWork mine;
  mine.mini_batches = 2;
  mine.ppo_epochs = 2;  // the second epoch sees ratios != 1, so clipping can act
  for (size_t i = 0; i < batch.size(); ++i)
    if (static_cast<int>(i % 4) == rank % size && !(rank == 3 && i >= 8)) mine.samples.push_back(batch[i]);
  // Rank 3 gets fewer samples than the others, and none of mini-batch 1 at the end.
  if (rank == 2) {
    for (size_t i = 8; i < batch.size(); ++i)
      if (i % 4 == 3) mine.samples.push_back(batch[i]);
  }
  Replica dist(GetParam());
  dist.engine.train(mine, MPI_COMM_WORLD);
  ASSERT_TRUE(check_replicas_identical(dist.model.params(), dist.model.num_params(), MPI_COMM_WORLD).is_ok());

  if (rank == 0) {
    Replica solo(GetParam());
    TrainWork all;
    all.mini_batches = 2;
    all.ppo_epochs = 2;
    all.samples = batch;
    solo.engine.train(all, MPI_COMM_SELF);
    double max_diff = 0, max_change = 0;
    Replica fresh(GetParam());
    for (size_t i = 0; i < solo.model.num_params(); ++i) {
      max_diff = std::max(max_diff, std::abs(static_cast<double>(solo.model.params()[i]) - dist.model.params()[i]));
      max_change = std::max(max_change, std::abs(static_cast<double>(solo.model.params()[i]) - fresh.model.params()[i]));
    }
    std::printf("max |solo - distributed| = %.3g, max update = %.3g\n", max_diff, max_change);
    EXPECT_GT(max_change, 1e-3);  // the updates did something
    // and the same thing: only the summation order differs, which Adam's normalisation can
    // amplify for near-zero gradients to a small fraction of one step (lr = 1e-2).
    EXPECT_LT(max_diff, 1e-4);
  }
}

// One update (one epoch, one mini-batch): the summed gradient itself, before Adam, equals the
// whole batch's gradient on one rank to float rounding.
TEST_P(PolicyUpdate, SummedGradientEqualsWholeBatchGradient) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto batch = make_batch(/*mini_batches=*/1);
  TrainWork mine, all;
  mine.samples.clear();
  for (size_t i = 0; i < batch.size(); ++i)
    if (static_cast<int>(i) % size == rank) mine.samples.push_back(batch[i]);
  all.samples = batch;
  Replica dist(GetParam());
  dist.engine.train(mine, MPI_COMM_WORLD);
  if (rank == 0) {
    Replica solo(GetParam());
    solo.engine.train(all, MPI_COMM_SELF);
    double max_diff = 0, max_grad = 0;
    for (size_t i = 0; i < solo.model.num_params(); ++i) {
      max_grad = std::max(max_grad, std::abs(static_cast<double>(solo.model.grads()[i])));
      max_diff = std::max(max_diff, std::abs(static_cast<double>(solo.model.grads()[i]) - dist.model.grads()[i]));
    }
    std::printf("gradient: max |solo - summed| = %.3g, max |g| = %.3g\n", max_diff, max_grad);
    EXPECT_GT(max_grad, 1e-4);
    EXPECT_LT(max_diff, 1e-5 * max_grad);
  }
}

INSTANTIATE_TEST_SUITE_P(AllAggregations, PolicyUpdate,
                         ::testing::Values(rl::LossAggregation::kTokenMean, rl::LossAggregation::kSeqMeanTokenMean,
                                           rl::LossAggregation::kSeqMeanTokenSumNorm));

TEST(PolicyGenerate, SampleDoesNotDependOnItsBatchOrRank) {
  Replica r(rl::LossAggregation::kTokenMean);
  std::vector<RolloutItem> items = {{1, 0, "write a kernel", 42}, {2, 0, "another prompt", 7}};
  auto both = r.engine.generate(items);
  auto alone = r.engine.generate({items[1]});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].completion_tokens, alone[0].completion_tokens);
  EXPECT_EQ(both[1].logprobs, alone[0].logprobs);
  EXPECT_EQ(both[1].uid, 2);
  EXPECT_EQ(both[0].prompt_tokens.size(), std::string("write a kernel").size());
  // Every rank generates the same completion for the same item.
  uint64_t h = checksum(both[0].logprobs.data(), both[0].logprobs.size());
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}

}  // namespace
}  // namespace leap::mpi
