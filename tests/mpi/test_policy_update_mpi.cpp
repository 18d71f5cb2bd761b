// design.md step 6 on the real CPU policy: four replicas, each training on a quarter of a batch
// (global normaliser, gradients summed over MPI), end with the same parameters as one replica
// that trains on the whole batch alone, for every loss aggregation mode, and the replicas stay
// bit-identical. Also: generation does not depend on which rank or batch a sample lands in, and
// the KL term (k3 to a frozen reference) reports what an independent computation gives and pulls
// the policy back to the reference.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>

#include "backend/cpu_backend.h"
#include "model/byte_tokenizer.h"
#include "mpi/grad_reduce.h"
#include "model/reference_policy.h"
#include "model/token_batch.h"
#include "mpi/policy_replica.h"
#include "mpi/train_samples.h"

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
  explicit Replica(rl::LossAggregation agg, double kl_beta = 0, double temperature = 1.0, int context = 0)
      : opt(model::OptimConfig{.lr = 1e-2, .grad_clip = 1.0}, model),
        engine(model, tok, &opt, options(agg, kl_beta, temperature, context)) {
    model.init_random(5);
  }
  static PolicyReplicaOptions options(rl::LossAggregation agg, double kl_beta, double temperature, int context = 0) {
    PolicyReplicaOptions o;
    o.context_tokens = context;  // 0: the KV cache grows with the prompts (dropping what was kept)
    o.sampler.temperature = temperature;
    o.loss.kl_beta = kl_beta;
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

// Training during the rollout (rl.overlap_training): part of each rank's share goes through
// train_early() under a normaliser of 1 before the step's train() (deferred_norm) adds the rest
// and applies 1 / N at the optimizer. The gradient accumulated is then N times the whole batch's,
// and the step reports the whole batch's loss and gradient norm. Rank 3 trains everything early,
// rank 2 nothing, ranks 0 and 1 half of theirs. With kl_beta > 0 the policy is moved away from
// its frozen reference first, so the KL term has a gradient of its own in both.
void expect_early_training_equals_late(rl::LossAggregation agg, double kl_beta) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto batch = make_batch(/*mini_batches=*/1);
  std::vector<TrainSample> early;
  TrainWork late, all;
  late.deferred_norm = true;
  std::vector<TrainSample> mine;
  for (size_t i = 0; i < batch.size(); ++i)
    if (static_cast<int>(i) % size == rank) mine.push_back(batch[i]);
  const size_t n_early = rank == 3 ? mine.size() : rank == 2 ? 0 : mine.size() / 2;
  early.assign(mine.begin(), mine.begin() + static_cast<long>(n_early));
  late.samples.assign(mine.begin() + static_cast<long>(n_early), mine.end());
  all.samples = batch;
  // The policy's weights are seed 6's and, with kl_beta > 0, the reference's seed 5's.
  auto with_reference = [kl_beta](Replica& r) {
    std::unique_ptr<model::ReferencePolicy> ref;
    if (kl_beta > 0) {
      ref = model::ReferencePolicy::copy_of(r.model, "seed 5");
      r.engine.set_reference(ref.get());
    }
    r.model.init_random(6);
    return ref;
  };
  Replica dist(agg, kl_beta);
  const auto dist_ref = with_reference(dist);
  // In two hand-outs, as a rank may get them.
  if (!early.empty()) dist.engine.train_early({early.begin(), early.begin() + 1});
  if (early.size() > 1) dist.engine.train_early({early.begin() + 1, early.end()});
  const TrainReport rd = dist.engine.train(late, MPI_COMM_WORLD);
  ASSERT_TRUE(check_replicas_identical(dist.model.params(), dist.model.num_params(), MPI_COMM_WORLD).is_ok());
  double sums[3] = {rd.loss, static_cast<double>(rd.early_sequences), rd.kl_sum};
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double loss = sums[0], early_sequences = sums[1], kl_sum = sums[2];
  if (rank == 0) {
    Replica solo(agg, kl_beta);
    const auto solo_ref = with_reference(solo);
    const TrainReport rs = solo.engine.train(all, MPI_COMM_SELF);
    // N, counted independently: completion tokens (token-mean) or sequences (seq-mean modes).
    double n = 0;
    for (const auto& s : batch)
      n += agg == rl::LossAggregation::kTokenMean ? static_cast<double>(s.old_logprobs.size()) : 1.0;
    double max_diff = 0, max_grad = 0;
    for (size_t i = 0; i < solo.model.num_params(); ++i) {
      max_grad = std::max(max_grad, std::abs(static_cast<double>(solo.model.grads()[i])));
      max_diff = std::max(max_diff, std::abs(static_cast<double>(solo.model.grads()[i]) - dist.model.grads()[i] / n));
    }
    std::printf("during the rollout (kl_beta %g): max |solo - summed / N| = %.3g (max |g| %.3g); loss %.6g vs %.6g; "
                "norm %.6g vs %.6g; kl %.6g vs %.6g\n", kl_beta, max_diff, max_grad, loss, rs.loss, rd.grad_norm,
                rs.grad_norm, kl_sum, rs.kl_sum);
    EXPECT_EQ(early_sequences, 1 + 1 + 3);  // ranks 0 and 1 (half of 3, rounded down), rank 3 all
    if (kl_beta > 0) {
      EXPECT_GT(rs.kl_sum, 1e-3);
    }
    EXPECT_NEAR(kl_sum, rs.kl_sum, 1e-5 * std::abs(rs.kl_sum) + 1e-9);
    EXPECT_GT(max_grad, 1e-4);
    EXPECT_LT(max_diff, 1e-5 * max_grad);
    EXPECT_NEAR(loss, rs.loss, 1e-5 * std::abs(rs.loss) + 1e-7);
    EXPECT_NEAR(rd.grad_norm, rs.grad_norm, 1e-5 * rs.grad_norm);
    // The step itself: Adam's first update is g / (|g| + eps) per weight, so rounding in a
    // near-zero gradient moves it by a small fraction of lr (1e-2); a wrong normaliser would
    // show in the gradient and norm checks above, which this one could not see.
    double max_param = 0;
    for (size_t i = 0; i < solo.model.num_params(); ++i)
      max_param = std::max(max_param, std::abs(static_cast<double>(solo.model.params()[i]) - dist.model.params()[i]));
    EXPECT_LT(max_param, 5e-4);
  }
}

TEST_P(PolicyUpdate, TrainingDuringTheRolloutEqualsTrainingAfterIt) { expect_early_training_equals_late(GetParam(), 0); }

TEST(PolicyKl, TrainingDuringTheRolloutEqualsTrainingAfterIt) {
  expect_early_training_equals_late(rl::LossAggregation::kTokenMean, 0.1);
}

INSTANTIATE_TEST_SUITE_P(AllAggregations, PolicyUpdate,
                         ::testing::Values(rl::LossAggregation::kTokenMean, rl::LossAggregation::kSeqMeanTokenMean,
                                           rl::LossAggregation::kSeqMeanTokenSumNorm));

// The KL term of the update, checked independently of the loss code's wiring: each sequence is
// run alone through two separately built models (the policy's weights and the reference's), and
// k3 = exp(ref - logp) - (ref - logp) - 1 is averaged over the completion tokens by hand.
double independent_kl(const std::vector<TrainSample>& samples, uint64_t policy_seed, uint64_t reference_seed) {
  backend::CpuBackend be{1};
  model::Transformer pol(tiny_config(), be), ref(tiny_config(), be);
  pol.init_random(policy_seed);
  ref.init_random(reference_seed);
  double sum = 0, tokens = 0;
  for (const auto& s : samples) {
    auto tb = model::TokenBatch::from_sequences({s.tokens});
    std::vector<float> lp(s.tokens.size()), rp(s.tokens.size());
    EXPECT_TRUE(pol.forward(tb, lp.data()).is_ok());
    EXPECT_TRUE(ref.forward(tb, rp.data()).is_ok());
    for (size_t t = static_cast<size_t>(s.prompt_len); t < s.tokens.size(); ++t) {
      const double d = static_cast<double>(rp[t]) - lp[t];
      sum += std::exp(d) - d - 1.0;
      tokens += 1;
    }
  }
  return sum / tokens;
}

TEST(PolicyKl, ReportedKlIsTheK3ToTheFrozenReference) {
  Replica r(rl::LossAggregation::kTokenMean, /*kl_beta=*/0.1);
  auto reference = model::ReferencePolicy::copy_of(r.model, "seed 5");  // the initial weights
  r.engine.set_reference(reference.get());
  r.model.init_random(6);  // the policy has moved away from its reference
  const std::string hash = reference->hash();
  TrainWork work;
  work.samples = make_batch(1);
  const TrainReport report = r.engine.train(work, MPI_COMM_SELF);
  const double want = independent_kl(work.samples, 6, 5);
  std::printf("kl: update %.9g, independent %.9g\n", report.kl_sum / report.tokens, want);
  EXPECT_GT(want, 1e-3);
  EXPECT_NEAR(report.kl_sum / report.tokens, want, 1e-5 * want);
  EXPECT_EQ(reference->hash(), hash) << "the reference is frozen";
}

TEST(PolicyKl, KlTermAloneDrawsThePolicyBackToItsReference) {
  Replica r(rl::LossAggregation::kTokenMean, /*kl_beta=*/1.0);
  auto reference = model::ReferencePolicy::copy_of(r.model, "seed 5");
  r.engine.set_reference(reference.get());
  r.model.init_random(6);
  TrainWork work;
  work.samples = make_batch(1);
  for (auto& s : work.samples) s.advantage = 0;  // no policy-gradient signal: only the KL pulls
  std::vector<double> kl;
  for (int step = 0; step < 6; ++step) {
    const TrainReport rep = r.engine.train(work, MPI_COMM_SELF);
    kl.push_back(rep.kl_sum / rep.tokens);
  }
  std::printf("kl over 6 updates: %.4g -> %.4g\n", kl.front(), kl.back());
  EXPECT_LT(kl.back(), 0.5 * kl.front());
}

// Three-turn trajectories whose prompts were appended (turn t's prompt = turn t-1's prompt and
// answer, then feedback tokens), plus a one-turn sample and a trajectory whose second prompt was
// re-rendered (not an extension): they stay per-turn.
struct Trajectories {
  std::vector<TurnRecord> records;
  std::vector<StepState::TrainItem> items;
  Trajectories() {
    Rng rng(17);
    auto draw = [&](int n) {
      std::vector<int32_t> v;
      for (int i = 0; i < n; ++i) v.push_back(static_cast<int32_t>(rng.below(256)));
      return v;
    };
    records.reserve(16);
    auto add = [&](int group, int sample, int turn, std::vector<int32_t> prompt) {
      TurnRecord r;
      r.turn = turn;
      r.completion.prompt_tokens = std::move(prompt);
      r.completion.completion_tokens = draw(3 + static_cast<int>(rng.below(6)));
      for (size_t j = 0; j < r.completion.completion_tokens.size(); ++j)
        r.completion.logprobs.push_back(static_cast<float>(-5.6 + 0.3 * rng.normal()));
      r.advantage = rng.uniform(-1, 1);
      records.push_back(std::move(r));
      items.push_back({group, sample, turn, nullptr});
      return records.back();
    };
    for (int s = 0; s < 3; ++s) {
      std::vector<int32_t> prompt = draw(6 + s);
      for (int turn = 1; turn <= 3; ++turn) {
        const TurnRecord& r = add(0, s, turn, prompt);
        prompt = r.completion.prompt_tokens;
        prompt.insert(prompt.end(), r.completion.completion_tokens.begin(), r.completion.completion_tokens.end());
        auto feedback = draw(4);
        prompt.insert(prompt.end(), feedback.begin(), feedback.end());
      }
    }
    add(1, 0, 1, draw(7));
    add(1, 1, 1, draw(5));
    add(1, 1, 2, draw(20));  // re-rendered: does not start with turn 1
    for (size_t i = 0; i < items.size(); ++i) items[i].record = &records[i];
  }
};

TEST(TrainTrajectoryOnce, EqualsPerTurnSequencesUnderTokenMean) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  Trajectories t;
  TrainSampleOptions per_turn{.mini_batches = 1, .ppo_epochs = 2, .trajectory_once = false};
  TrainSampleOptions once = per_turn;
  once.trajectory_once = true;
  TrainPlan a = plan_training(t.items, 1, per_turn), b = plan_training(t.items, 1, once);
  EXPECT_EQ(a.merged, 0);
  EXPECT_EQ(b.merged, 3);                 // the three appended trajectories
  EXPECT_EQ(a.sequences, 12);
  EXPECT_EQ(b.sequences, 3 + 1 + 2);      // merged, one-turn, the re-rendered pair
  EXPECT_LT(b.positions, a.positions);
  Replica ra(rl::LossAggregation::kTokenMean), rb(rl::LossAggregation::kTokenMean);
  TrainReport rep_a = ra.engine.train(a.work[0], MPI_COMM_SELF);
  TrainReport rep_b = rb.engine.train(b.work[0], MPI_COMM_SELF);
  EXPECT_EQ(rep_a.tokens, rep_b.tokens);
  EXPECT_NEAR(rep_a.loss, rep_b.loss, 1e-5 * (1 + std::abs(rep_a.loss)));
  double max_diff = 0, max_change = 0;
  Replica fresh(rl::LossAggregation::kTokenMean);
  for (size_t i = 0; i < ra.model.num_params(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(ra.model.params()[i]) - rb.model.params()[i]));
    max_change = std::max(max_change, std::abs(static_cast<double>(ra.model.params()[i]) - fresh.model.params()[i]));
  }
  std::printf("trajectory once vs per turn: max |diff| = %.3g, max update = %.3g\n", max_diff, max_change);
  EXPECT_GT(max_change, 1e-3);
  EXPECT_LT(max_diff, 1e-4);
  // A loss over each turn's tokens with the wrong advantages would not match: the test can fail.
  for (auto& sample : b.work[0].samples)
    for (auto& adv : sample.span_advantage) adv = -adv;
  Replica rc(rl::LossAggregation::kTokenMean);
  rc.engine.train(b.work[0], MPI_COMM_SELF);
  double flipped = 0;
  for (size_t i = 0; i < ra.model.num_params(); ++i)
    flipped = std::max(flipped, std::abs(static_cast<double>(ra.model.params()[i]) - rc.model.params()[i]));
  EXPECT_GT(flipped, 1e-3);
}

TEST(PolicyGenerate, SampleDoesNotDependOnItsBatchOrRank) {
  Replica r(rl::LossAggregation::kTokenMean);
  model::ByteTokenizer tok;
  std::vector<RolloutItem> items = {{1, 0, tok.encode("write a kernel", false), 42},
                                    {2, 0, tok.encode("another prompt", false), 7}};
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

// A completion as a training sample with advantage 1, at the log-probs it was sampled with.
TrainSample trained_on(const Completion& c) {
  TrainSample s;
  s.tokens = c.prompt_tokens;
  s.tokens.insert(s.tokens.end(), c.completion_tokens.begin(), c.completion_tokens.end());
  s.prompt_len = static_cast<int32_t>(c.prompt_tokens.size());
  s.old_logprobs = c.logprobs;
  s.advantage = 1.0f;
  return s;
}

// A later turn reuses the KV cache its sample's previous turn left (sampler.reuse_kv), but never
// across an update: train() drops the kept caches, which the old weights computed.
TEST(PolicyGenerate, AnUpdateDropsTheKeptKvCaches) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  // Sized for the run up front, as rank_setup does: a cache that grew would drop what it kept.
  Replica r(rl::LossAggregation::kTokenMean, 0, 1.0, /*context=*/96);
  const RolloutItem turn1{1, 0, r.tok.encode("write a kernel that adds two vectors", false), 42};
  auto later = [&](const Completion& c) {
    RolloutItem t2{2, 0, c.prompt_tokens, 43};
    t2.prompt_ids.insert(t2.prompt_ids.end(), c.completion_tokens.begin(), c.completion_tokens.end());
    const auto fb = r.tok.encode("\nerror: fix it", false);
    t2.prompt_ids.insert(t2.prompt_ids.end(), fb.begin(), fb.end());
    return t2;
  };
  // Without an update between the turns: turn 2 runs only its new tokens.
  const Completion a = r.engine.generate({turn1})[0];
  EXPECT_GT(r.engine.generate({later(a)})[0].kv_reused_tokens, 0);
  // With one: nothing kept is used.
  const Completion b = r.engine.generate({turn1})[0];
  TrainWork work;
  work.samples.push_back(trained_on(b));
  r.engine.train(work, MPI_COMM_SELF);
  EXPECT_EQ(r.engine.generate({later(b)})[0].kv_reused_tokens, 0);
}

// Sampled at temperature 0.5, a first update's ratio is 1: the training forward takes its
// log-probs at the temperature the sampler recorded them at (at 1 they would differ by far more).
TEST(PolicyGenerate, FirstUpdateRatioIsOneAtTheSamplingTemperature) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  Replica r(rl::LossAggregation::kTokenMean, /*kl_beta=*/0, /*temperature=*/0.5);
  EXPECT_EQ(r.model.logprob_temperature(), 0.5);
  std::vector<RolloutItem> items = {{1, 0, r.tok.encode("write a kernel", false), 42},
                                    {2, 0, r.tok.encode("another prompt", false), 7}};
  TrainWork work;
  for (const Completion& c : r.engine.generate(items)) work.samples.push_back(trained_on(c));
  const TrainReport rep = r.engine.train(work, MPI_COMM_SELF);
  ASSERT_GT(rep.tokens, 0);
  std::printf("first update at temperature 0.5: ratio mean %.7f, max %.7f\n",
              rep.ratio_sum / rep.tokens, rep.ratio_max);
  EXPECT_NEAR(rep.ratio_sum / rep.tokens, 1.0, 1e-4);
  EXPECT_NEAR(rep.ratio_max, 1.0, 1e-4);
}

}  // namespace
}  // namespace leap::mpi
