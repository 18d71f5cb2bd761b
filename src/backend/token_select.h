// The rule that picks a generated token from a row of logits (temperature, top-k, top-p), as a
// pure function of the row and one uniform draw. The sampler's host path applies it to
// downloaded rows; Backend::sample_rows applies it where the logits live (the CUDA backend's
// kernel, cuda/kernels/sample.cuh, reproduces it without a sort), so only ids and
// log-probabilities need to leave a device.
#pragma once

#include <cstdint>

namespace leap::backend {

struct TokenRule {
  double temperature = 1.0;  // <= 0: greedy
  double top_p = 1.0;        // < 1: the shortest prefix (logit order) holding this mass
  int top_k = 0;             // 0 < top_k < n: the top_k most likely only
};

// The inverse temperature s of the recorded log-probabilities: 1 / temperature, or 1 when greedy.
// They are log softmax(s * logits) over all V, untruncated by top-k or top-p, as in veRL: the
// distribution the training forward differentiates (Transformer::set_logprob_temperature), so
// that the PPO ratio of an update is against the policy that drew the tokens.
inline float logprob_inv_temperature(const TokenRule& rule) {
  return rule.temperature > 0.0 ? static_cast<float>(1.0 / rule.temperature) : 1.0f;
}

// The chosen id among ids below sample_below (0: all V), and *logprob = its log-probability
// log softmax(s * logits) over all V (s = logprob_inv_temperature(rule)). Candidates are in id
// order when nothing truncates them, else by logit descending then id ascending; the draw is
// the first whose running weight exceeds uniform * total (uniform in [0, 1); unused when greedy,
// which takes the first maximum).
int32_t select_token(const float* logits, int V, const TokenRule& rule, double uniform,
                     float* logprob, int sample_below = 0);

// Ends the job: a row of V logits is not finite (NaN or infinity), so its probabilities mean
// nothing. The host rule and the CUDA sampler (on a non-finite log-probability) both call it.
[[noreturn]] void fail_on_non_finite_logits(int V);

}  // namespace leap::backend
