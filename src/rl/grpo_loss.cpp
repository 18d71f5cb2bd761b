// PPO-clip with dual clip, k3 KL and three aggregation modes over a global normaliser.
#include "rl/grpo_loss.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace leap::rl {

namespace {

constexpr double kMaxLogRatio = 20.0;
// The k3 estimate per token is clamped too (as veRL's low_var_kl): a token the reference finds
// far likelier than the policy now does (d = 15 nats: k3 about 3.3e6) would otherwise rule the
// gradient's norm, and clipping by it would shrink every other token's update. Beyond the clamp
// the term is constant: no gradient.
constexpr double kMaxKl = 10.0;

void check_inputs(const LossInputs& in, const LossOptions* opts) {
  const size_t n = in.logp.size();
  LEAP_CHECK(in.old_logp.size() == n && in.mask.size() == n, "token arrays differ in length");
  LEAP_CHECK(in.offsets.size() == in.advantages.size() + 1, "need S + 1 offsets for S advantages");
  LEAP_CHECK(in.offsets.front() == 0 && in.offsets.back() == static_cast<int64_t>(n),
             "offsets must run from 0 to the token count");
  for (size_t s = 0; s + 1 < in.offsets.size(); ++s)
    LEAP_CHECK(in.offsets[s] <= in.offsets[s + 1], "offsets decrease at sequence " << s);
  if (opts != nullptr && opts->kl_beta > 0)
    LEAP_CHECK(in.ref_logp.size() == n, "kl_beta > 0 needs reference log-probabilities");
  LEAP_CHECK(in.token_advantages.empty() || in.token_advantages.size() == n,
             "token advantages must be one per token");
  LEAP_CHECK(in.token_advantages.empty() || opts == nullptr ||
                 opts->aggregation == LossAggregation::kTokenMean,
             "per-token advantages (a trajectory trained once) are exact under token-mean only");
}

double masked_count(const LossInputs& in, size_t s) {
  double c = 0;
  for (int64_t t = in.offsets[s]; t < in.offsets[s + 1]; ++t) c += in.mask[static_cast<size_t>(t)];
  return c;
}

struct TokenTerm {
  double loss = 0, grad = 0;  // per-token loss and d loss / d logp, before aggregation
};

// One token's clipped surrogate plus KL; counts its statistics.
TokenTerm token_term(double logp, double old_logp, double ref_logp, double adv,
                     const LossOptions& o, LossStats* st) {
  // The log-ratio is clamped (as veRL does) so one stale token cannot overflow exp(); beyond the
  // clamp the ratio is constant and the PPO branch carries no gradient.
  const double log_ratio = logp - old_logp;
  const bool saturated = std::abs(log_ratio) > kMaxLogRatio;
  const double ratio = std::exp(std::clamp(log_ratio, -kMaxLogRatio, kMaxLogRatio));
  const double lo = 1.0 - o.clip_eps_low, hi = 1.0 + o.clip_eps_high;
  const double pg1 = -adv * ratio;
  const double pg2 = -adv * std::clamp(ratio, lo, hi);
  TokenTerm term;
  // Inside the clip range both branches agree and carry the gradient; outside, the clipped
  // branch is a constant and wins only when it is strictly the larger loss.
  const bool ppo_clipped = pg2 > pg1;
  term.loss = ppo_clipped ? pg2 : pg1;
  term.grad = (ppo_clipped || saturated) ? 0.0 : -adv * ratio;
  bool dual_clipped = false;
  if (o.dual_clip > 1.0 && adv < 0) {
    const double pg3 = -adv * o.dual_clip;
    if (pg3 < term.loss) {
      term.loss = pg3;
      term.grad = 0.0;
      dual_clipped = true;
    }
  }
  if (o.kl_beta > 0) {
    const double d = ref_logp - logp;
    const double k3 = std::exp(std::min(d, 2 * kMaxLogRatio)) - d - 1.0;
    const double kl = std::min(k3, kMaxKl);
    term.loss += o.kl_beta * kl;
    if (k3 < kMaxKl) term.grad += o.kl_beta * (1.0 - std::exp(d));
    st->kl_sum += kl;
  }
  st->tokens += 1;
  st->clipped += (ppo_clipped && !dual_clipped) ? 1 : 0;
  st->dual_clipped += dual_clipped ? 1 : 0;
  st->ratio_sum += ratio;
  st->ratio_max = std::max(st->ratio_max, ratio);
  st->neg_logp_sum += -logp;
  return term;
}

}  // namespace

void LossStats::merge(const LossStats& o) {
  tokens += o.tokens;
  clipped += o.clipped;
  dual_clipped += o.dual_clipped;
  ratio_sum += o.ratio_sum;
  ratio_max = std::max(ratio_max, o.ratio_max);
  kl_sum += o.kl_sum;
  neg_logp_sum += o.neg_logp_sum;
}

double loss_normaliser(const LossInputs& in, LossAggregation aggregation) {
  check_inputs(in, nullptr);
  double n = 0;
  for (size_t s = 0; s < in.advantages.size(); ++s) {
    const double c = masked_count(in, s);
    n += aggregation == LossAggregation::kTokenMean ? c : (c > 0 ? 1.0 : 0.0);
  }
  return n;
}

LossOutput grpo_loss(const LossInputs& in, const LossOptions& o, double global_normaliser, bool deferred) {
  check_inputs(in, &o);
  LEAP_CHECK(o.clip_eps_low >= 0 && o.clip_eps_low < 1 && o.clip_eps_high >= 0, "clip range");
  LEAP_CHECK(o.loss_norm_tokens > 0, "loss_norm_tokens " << o.loss_norm_tokens);
  LossOutput out;
  out.dlogp.assign(in.logp.size(), 0.0f);
  const double local = loss_normaliser(in, o.aggregation);
  if (local == 0) return out;  // nothing here trains; the normaliser may legitimately be 0
  if (deferred) global_normaliser = 1.0;
  else LEAP_CHECK(global_normaliser >= local, "global normaliser " << global_normaliser << " below this part's " << local);
  for (size_t s = 0; s < in.advantages.size(); ++s) {
    const double n_s = masked_count(in, s);
    if (n_s == 0) continue;
    // Weight of one token's loss in L: the aggregation mode in one number.
    double w = 1.0 / global_normaliser;
    if (o.aggregation == LossAggregation::kSeqMeanTokenMean) w /= n_s;
    if (o.aggregation == LossAggregation::kSeqMeanTokenSumNorm) w /= o.loss_norm_tokens;
    for (int64_t t = in.offsets[s]; t < in.offsets[s + 1]; ++t) {
      const auto i = static_cast<size_t>(t);
      const double m = in.mask[i];
      if (m == 0) continue;
      const double ref = o.kl_beta > 0 ? in.ref_logp[i] : 0.0;
      const TokenTerm term =
          token_term(in.logp[i], in.old_logp[i], ref,
                     in.token_advantages.empty() ? in.advantages[s] : in.token_advantages[i], o,
                     &out.stats);
      out.loss += w * m * term.loss;
      out.dlogp[i] = static_cast<float>(w * m * term.grad);
    }
  }
  return out;
}

}  // namespace leap::rl
