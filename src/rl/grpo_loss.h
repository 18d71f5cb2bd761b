// The GRPO/PPO-clip loss on per-token log-probabilities, and its gradient with respect to them.
//
// Per token t of sequence s (one turn-sample), with advantage A_s and ratio r = exp(logp - old):
//   pg = max(-A*r, -A*clip(r, 1 - eps_low, 1 + eps_high));  for A < 0 with dual_clip c > 1,
//   pg = min(pg, -A*c)  (dual-clip: a bad sample whose ratio exploded cannot dominate);
//   l  = pg + beta * k3,  k3 = exp(ref - logp) - (ref - logp) - 1  (no reference when beta = 0).
// Aggregation over masked tokens, N being the GLOBAL normaliser:
//   token-mean               L = sum_{s,t} m*l / N_tokens                 (DAPO)
//   seq-mean-token-mean      L = sum_s (sum_t m*l / sum_t m) / N_seqs     (GRPO)
//   seq-mean-token-sum-norm  L = sum_s (sum_t m*l / loss_norm_tokens) / N_seqs   (Dr. GRPO)
// N is an input: the caller sums loss_normaliser() over every rank and micro-batch first, so that
// the sum of every part's loss and gradient equals the whole batch's (docs/design.md, step 6). The
// gradient is d L / d logp per token, written (not accumulated) into the output; the model's
// backward takes it from there. A sequence must not be split across parts (its own token count
// is part of seq-mean-token-mean). Sequences with no masked token count for nothing.
// Statistics are sums and counts, so ranks can reduce them before taking means.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace leap::rl {

enum class LossAggregation { kTokenMean, kSeqMeanTokenMean, kSeqMeanTokenSumNorm };

struct LossOptions {
  double clip_eps_low = 0.2;
  double clip_eps_high = 0.28;
  double dual_clip = 0;  // c > 1 turns dual-clip on; 0 is off
  LossAggregation aggregation = LossAggregation::kTokenMean;
  double loss_norm_tokens = 1024;  // the constant of seq-mean-token-sum-norm
  double kl_beta = 0;              // 0: no reference policy, ref_logp may be empty
};

// S sequences of flat tokens; sequence s covers [offsets[s], offsets[s + 1]).
struct LossInputs {
  std::span<const float> logp;        // current policy (the one being differentiated)
  std::span<const float> old_logp;    // behaviour policy, recorded by the sampler
  std::span<const float> ref_logp;    // frozen reference; needed only when kl_beta > 0
  std::span<const float> mask;        // 1 for completion tokens that train, 0 otherwise
  std::span<const float> advantages;  // one per sequence
  std::span<const int64_t> offsets;   // S + 1 non-decreasing offsets, from 0 to the token count
  // Optional, one per token: overrides `advantages` (a whole trajectory trained as one sequence,
  // each turn's tokens with that turn's advantage; exact under token-mean only).
  std::span<const float> token_advantages;
};

struct LossStats {
  double tokens = 0;        // masked tokens seen
  double clipped = 0;       // tokens whose gradient the PPO clip removed
  double dual_clipped = 0;  // tokens whose gradient the dual clip removed
  double ratio_sum = 0, ratio_max = 0;
  double kl_sum = 0;        // k3 estimate summed over tokens (0 without a reference)
  double neg_logp_sum = 0;  // -logp summed: an entropy estimate for on-policy samples
  void merge(const LossStats& other);
  double clip_frac() const { return tokens > 0 ? (clipped + dual_clipped) / tokens : 0; }
  double ratio_mean() const { return tokens > 0 ? ratio_sum / tokens : 0; }
  double kl_mean() const { return tokens > 0 ? kl_sum / tokens : 0; }
  double entropy_proxy() const { return tokens > 0 ? neg_logp_sum / tokens : 0; }
};

struct LossOutput {
  double loss = 0;           // this part's contribution to the global loss
  std::vector<float> dlogp;  // d loss / d logp, one per token (0 where masked out)
  LossStats stats;
};

// This part's contribution to the global normaliser: masked tokens for token-mean, sequences with
// at least one masked token for the seq-mean modes.
double loss_normaliser(const LossInputs& in, LossAggregation aggregation);

// Loss and gradient of this part under the global normaliser (> 0 unless nothing is masked in).
// With `deferred`, global_normaliser is not known yet and is ignored: the loss and gradient are
// those under a normaliser of 1, and the caller divides by the global one later (both are linear
// in 1 / N; the streaming pipeline's training during the rollout).
LossOutput grpo_loss(const LossInputs& in, const LossOptions& opts, double global_normaliser, bool deferred = false);

}  // namespace leap::rl
