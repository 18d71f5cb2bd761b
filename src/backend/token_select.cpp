// The token rule on the host (token_select.h): a partial sort for top-k, a full one for top-p.
#include "backend/token_select.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

#include "common/check.h"

namespace leap::backend {

int32_t select_token(const float* logits, int V, const TokenRule& rule, double uniform,
                     float* logprob, int sample_below) {
  // Log-probabilities are over all V rows at the rule's temperature, untruncated (what the
  // training forward computes: z = s * logits); only ids below sample_below can be drawn.
  const int n = sample_below > 0 ? std::min(sample_below, V) : V;
  const float s = logprob_inv_temperature(rule);
  float mx = logits[0];
  for (int v = 1; v < V; ++v) mx = std::max(mx, logits[v]);
  const float smx = s * mx;  // s > 0: the largest s * logits[v]
  double sum = 0.0;
  for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(s * logits[v] - smx));
  const float lse = smx + static_cast<float>(std::log(sum));
  // A NaN or infinite logit makes every probability of the row meaningless (and the sort below
  // undefined): the policy's weights are not finite, or its forward overflowed.
  if (!std::isfinite(lse)) fail_on_non_finite_logits(V);
  int32_t chosen = 0;
  if (rule.temperature <= 0.0) {
    chosen = static_cast<int32_t>(std::max_element(logits, logits + n) - logits);  // first maximum
  } else {
    // Candidates ordered by logit (ties by id) when truncation needs an order.
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    size_t keep = idx.size();
    if (rule.top_k > 0 && rule.top_k < n) {
      keep = static_cast<size_t>(rule.top_k);
      std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(),
                        by_logit);
    } else if (rule.top_p < 1.0) {
      std::sort(idx.begin(), idx.end(), by_logit);
    }
    // The weights are measured from the largest drawable logit: from a padded row's larger one,
    // at a low temperature every drawable weight would underflow to 0 and the draw would fall
    // to the last candidate whatever the logits say.
    const float mx_draw = *std::max_element(logits, logits + n);
    const double inv_t = 1.0 / rule.temperature;
    std::vector<double> w(keep);
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      w[i] = std::exp((static_cast<double>(logits[idx[i]]) - mx_draw) * inv_t);
      total += w[i];
    }
    if (rule.top_p < 1.0) {
      double acc = 0.0;
      size_t cut = keep;
      for (size_t i = 0; i < keep; ++i) {
        acc += w[i];
        if (acc >= rule.top_p * total) {
          cut = i + 1;
          break;
        }
      }
      keep = cut;
      total = acc;
    }
    double u = uniform * total;
    // When rounding leaves u >= 0 after every weight, the last candidate of nonzero weight (as the
    // CUDA kernel picks its last non-empty bin), never one the model gives no mass.
    size_t last = keep - 1;
    while (last > 0 && w[last] == 0.0) --last;
    chosen = idx[last];
    for (size_t i = 0; i < keep; ++i) {
      u -= w[i];
      if (u < 0) {
        chosen = idx[i];
        break;
      }
    }
  }
  *logprob = s * logits[chosen] - lse;
  return chosen;
}

void fail_on_non_finite_logits(int V) {
  LEAP_FATAL("the policy's logits are not finite (NaN or infinity in a row of "
             << V << "): its weights are corrupt or its forward overflowed; check the policy folder's weights, or "
                "resume from an earlier checkpoint");
}

}  // namespace leap::backend
