// GRPO loss: hand-worked tokens (inside the clip range, clipped, dual-clipped, KL), normaliser
// contributions, finite differences, and the property docs/design.md relies on: a batch split into
// parts under the global normaliser gives the whole batch's loss and gradient when summed, in
// every aggregation mode.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/rng.h"
#include "rl/grpo_loss.h"

namespace leap::rl {
namespace {

constexpr LossAggregation kModes[] = {LossAggregation::kTokenMean,
                                      LossAggregation::kSeqMeanTokenMean,
                                      LossAggregation::kSeqMeanTokenSumNorm};

// Owns the arrays a LossInputs views.
struct Batch {
  std::vector<float> logp, old_logp, ref_logp, mask, adv;
  std::vector<int64_t> offsets{0};
  LossInputs view() const { return {logp, old_logp, ref_logp, mask, adv, offsets}; }
  void add_sequence(float a, const std::vector<float>& lp, const std::vector<float>& old,
                    const std::vector<float>& m, const std::vector<float>& ref = {}) {
    adv.push_back(a);
    logp.insert(logp.end(), lp.begin(), lp.end());
    old_logp.insert(old_logp.end(), old.begin(), old.end());
    mask.insert(mask.end(), m.begin(), m.end());
    ref_logp.insert(ref_logp.end(), ref.empty() ? old.begin() : ref.begin(),
                    ref.empty() ? old.end() : ref.end());
    offsets.push_back(static_cast<int64_t>(logp.size()));
  }
  // Sequences [s0, s1) as a batch of their own.
  Batch slice(size_t s0, size_t s1) const {
    Batch b;
    for (size_t s = s0; s < s1; ++s) {
      auto lo = static_cast<size_t>(offsets[s]), hi = static_cast<size_t>(offsets[s + 1]);
      auto part = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + lo, v.begin() + hi);
      };
      b.add_sequence(adv[s], part(logp), part(old_logp), part(mask), part(ref_logp));
    }
    return b;
  }
};

Batch random_batch(Rng& rng, int n_seq) {
  Batch b;
  for (int s = 0; s < n_seq; ++s) {
    const size_t len = 1 + rng.below(12);
    std::vector<float> lp, old, m, ref;
    for (size_t t = 0; t < len; ++t) {
      const double o = -rng.uniform(0.05, 3.0);
      old.push_back(static_cast<float>(o));
      lp.push_back(static_cast<float>(o + 0.5 * rng.normal()));
      ref.push_back(static_cast<float>(o + 0.2 * rng.normal()));
      m.push_back(rng.uniform() < 0.8 ? 1.0f : 0.0f);
    }
    if (s == 3) std::fill(m.begin(), m.end(), 0.0f);  // a sequence with nothing to train
    b.add_sequence(static_cast<float>(rng.normal()), lp, old, m, ref);
  }
  return b;
}

TEST(GrpoLoss, HandWorkedClipOnPositiveAdvantage) {
  Batch b;
  // ratio 1.5 (clipped at 1.28 for A > 0: no gradient) and ratio 1 (gradient -A * 1).
  b.add_sequence(1.0f, {std::log(1.5f) - 1.0f, -2.0f}, {-1.0f, -2.0f}, {1, 1});
  LossOptions o{.clip_eps_low = 0.2, .clip_eps_high = 0.28};
  auto out = grpo_loss(b.view(), o, loss_normaliser(b.view(), o.aggregation));
  EXPECT_NEAR(out.loss, (-1.28 - 1.0) / 2, 1e-6);
  EXPECT_NEAR(out.dlogp[0], 0.0, 1e-7);
  EXPECT_NEAR(out.dlogp[1], -0.5, 1e-7);
  EXPECT_EQ(out.stats.clipped, 1);
  EXPECT_NEAR(out.stats.ratio_max, 1.5, 1e-6);
  EXPECT_NEAR(out.stats.ratio_mean(), 1.25, 1e-6);
  EXPECT_NEAR(out.stats.entropy_proxy(), (1.0 - std::log(1.5) + 2.0) / 2, 1e-6);
}

TEST(GrpoLoss, HandWorkedNegativeAdvantageAndDualClip) {
  Batch b;
  // A = -1: ratio 0.5 is clipped below (loss 0.8, no gradient); ratio 5 is unclipped (loss 5,
  // gradient 5) unless dual-clip c = 3 caps it (loss 3, no gradient).
  b.add_sequence(-1.0f, {std::log(0.5f), std::log(5.0f)}, {0.0f, 0.0f}, {1, 1});
  LossOptions o{.clip_eps_low = 0.2, .clip_eps_high = 0.2};
  auto out = grpo_loss(b.view(), o, 2);
  EXPECT_NEAR(out.loss, (0.8 + 5.0) / 2, 1e-6);
  EXPECT_NEAR(out.dlogp[0], 0.0, 1e-7);
  EXPECT_NEAR(out.dlogp[1], 5.0 / 2, 1e-6);
  o.dual_clip = 3.0;
  out = grpo_loss(b.view(), o, 2);
  EXPECT_NEAR(out.loss, (0.8 + 3.0) / 2, 1e-6);
  EXPECT_NEAR(out.dlogp[1], 0.0, 1e-7);
  EXPECT_EQ(out.stats.clipped, 1);
  EXPECT_EQ(out.stats.dual_clipped, 1);
  EXPECT_NEAR(out.stats.clip_frac(), 1.0, 1e-12);
}

TEST(GrpoLoss, HandWorkedK3Kl) {
  Batch b;
  // ratio 1, A = 0: only the KL acts. d = ref - logp = 0.5: k3 = e^0.5 - 1.5, grad 1 - e^0.5.
  b.add_sequence(0.0f, {-1.0f}, {-1.0f}, {1}, {-0.5f});
  LossOptions o{.kl_beta = 0.1};
  auto out = grpo_loss(b.view(), o, 1);
  EXPECT_NEAR(out.loss, 0.1 * (std::exp(0.5) - 1.5), 1e-7);
  EXPECT_NEAR(out.dlogp[0], 0.1 * (1 - std::exp(0.5)), 1e-7);
  EXPECT_NEAR(out.stats.kl_mean(), std::exp(0.5) - 1.5, 1e-7);
}

// k3 = e^d - d - 1 with d = ref - logp grows as e^d: a token the reference finds 15 nats likelier
// than the policy would give 3.3e6 and rule the gradient's norm. It is clamped at 10, with no
// gradient beyond; below the clamp it is the hand-worked value.
TEST(GrpoLoss, TheK3TermIsClampedAtTen) {
  Batch b;
  b.add_sequence(0.0f, {-16.0f, -1.0f}, {-16.0f, -1.0f}, {1, 1}, {-1.0f, 0.0f});  // d = 15, then 1
  LossOptions o{.kl_beta = 0.1};
  auto out = grpo_loss(b.view(), o, 2);
  EXPECT_NEAR(out.loss, 0.1 * (10.0 + (std::exp(1.0) - 2.0)) / 2, 1e-7);
  EXPECT_EQ(out.dlogp[0], 0.0f);
  EXPECT_NEAR(out.dlogp[1], 0.1 * (1 - std::exp(1.0)) / 2, 1e-7);
  EXPECT_NEAR(out.stats.kl_mean(), (10.0 + std::exp(1.0) - 2.0) / 2, 1e-7);
}

TEST(GrpoLoss, ExtremeLogRatioStaysFinite) {
  Batch b;
  // A stale token 200 nats more likely now: exp would overflow; the clamp at 20 keeps it finite.
  b.add_sequence(-1.0f, {0.0f, -1.0f}, {-200.0f, -1.0f}, {1, 1});
  auto out = grpo_loss(b.view(), {}, 2);
  EXPECT_TRUE(std::isfinite(out.loss));
  EXPECT_NEAR(out.loss, (std::exp(20.0) + 1.0) / 2, 1e-6 * std::exp(20.0));
  EXPECT_EQ(out.dlogp[0], 0.0f);
  EXPECT_NEAR(out.dlogp[1], 0.5, 1e-7);
}

TEST(GrpoLoss, OnPolicyRatioIsOneAndNothingClips) {
  Rng rng(3);
  Batch b = random_batch(rng, 8);
  b.logp = b.old_logp;
  auto out = grpo_loss(b.view(), {}, loss_normaliser(b.view(), LossAggregation::kTokenMean));
  EXPECT_EQ(out.stats.clip_frac(), 0.0);
  EXPECT_NEAR(out.stats.ratio_mean(), 1.0, 1e-12);
}

TEST(GrpoLoss, NormaliserContributions) {
  Batch b;
  b.add_sequence(1, {-1, -1, -1}, {-1, -1, -1}, {1, 0, 1});
  b.add_sequence(1, {-1, -1}, {-1, -1}, {0, 0});  // nothing masked in: counts for nothing
  b.add_sequence(1, {-1}, {-1}, {1});
  EXPECT_EQ(loss_normaliser(b.view(), LossAggregation::kTokenMean), 3.0);
  EXPECT_EQ(loss_normaliser(b.view(), LossAggregation::kSeqMeanTokenMean), 2.0);
  EXPECT_EQ(loss_normaliser(b.view(), LossAggregation::kSeqMeanTokenSumNorm), 2.0);
}

TEST(GrpoLoss, SeqMeanTokenSumNormDividesByTheConstant) {
  Batch b;
  b.add_sequence(1, {-1, -1, -1}, {-1, -1, -1}, {1, 1, 1});  // ratio 1: loss -1 per token
  b.add_sequence(1, {-1}, {-1}, {1});
  LossOptions o{.aggregation = LossAggregation::kSeqMeanTokenSumNorm, .loss_norm_tokens = 8};
  EXPECT_NEAR(grpo_loss(b.view(), o, 2).loss, (-3.0 / 8 - 1.0 / 8) / 2, 1e-12);
  o.aggregation = LossAggregation::kSeqMeanTokenMean;
  EXPECT_NEAR(grpo_loss(b.view(), o, 2).loss, -1.0, 1e-12);
}

TEST(GrpoLoss, GradientMatchesFiniteDifferences) {
  Rng rng(4);
  for (auto mode : kModes) {
    Batch b = random_batch(rng, 6);
    LossOptions o{.dual_clip = 3.0, .aggregation = mode, .loss_norm_tokens = 16, .kl_beta = 0.05};
    const double norm = loss_normaliser(b.view(), mode);
    auto out = grpo_loss(b.view(), o, norm);
    const double lo = 1 - o.clip_eps_low, hi = 1 + o.clip_eps_high;
    for (size_t i = 0; i < b.logp.size(); ++i) {
      const double r = std::exp(double(b.logp[i]) - b.old_logp[i]);
      // Skip tokens within reach of a kink: the derivative is one-sided there.
      if (std::abs(r - lo) < 0.02 || std::abs(r - hi) < 0.02 || std::abs(r - 3.0) < 0.05) continue;
      const float h = 1e-2f;
      Batch p = b, m = b;
      p.logp[i] += h;
      m.logp[i] -= h;
      const double fd = (grpo_loss(p.view(), o, norm).loss - grpo_loss(m.view(), o, norm).loss) /
                        (double(p.logp[i]) - double(m.logp[i]));
      EXPECT_NEAR(out.dlogp[i], fd, 2e-3 * std::max(1.0, std::abs(fd))) << "token " << i;
    }
  }
}

TEST(GrpoLoss, SplitBatchWithGlobalNormaliserEqualsWholeBatch) {
  Rng rng(5);
  for (auto mode : kModes) {
    Batch whole = random_batch(rng, 10);
    LossOptions o{.dual_clip = 3.0, .aggregation = mode, .loss_norm_tokens = 12, .kl_beta = 0.05};
    auto full = grpo_loss(whole.view(), o, loss_normaliser(whole.view(), mode));
    ASSERT_GT(full.stats.clip_frac(), 0.0);
    // Three uneven parts, as three ranks (or micro-batches) would hold them.
    std::vector<Batch> parts = {whole.slice(0, 2), whole.slice(2, 7), whole.slice(7, 10)};
    double global = 0;
    for (const auto& p : parts) global += loss_normaliser(p.view(), mode);
    double loss = 0, local_loss = 0;
    std::vector<float> grad;
    LossStats stats;
    for (const auto& p : parts) {
      auto out = grpo_loss(p.view(), o, global);
      loss += out.loss;
      grad.insert(grad.end(), out.dlogp.begin(), out.dlogp.end());
      stats.merge(out.stats);
      local_loss += grpo_loss(p.view(), o, loss_normaliser(p.view(), mode)).loss;
    }
    EXPECT_NEAR(loss, full.loss, 1e-12);
    ASSERT_EQ(grad.size(), full.dlogp.size());
    for (size_t i = 0; i < grad.size(); ++i)
      EXPECT_FLOAT_EQ(grad[i], full.dlogp[i]) << "token " << i;
    EXPECT_EQ(stats.tokens, full.stats.tokens);
    EXPECT_EQ(stats.clipped, full.stats.clipped);
    EXPECT_DOUBLE_EQ(stats.ratio_max, full.stats.ratio_max);
    // Local normalisers would not add up: the test can tell.
    EXPECT_GT(std::abs(local_loss - full.loss), 1e-6);
  }
}

}  // namespace
}  // namespace leap::rl
