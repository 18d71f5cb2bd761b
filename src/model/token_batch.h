// A batch of token sequences of different lengths, right-padded to a common length T.
// Right padding keeps every real token at its true position (0..len-1), and causal attention
// means padding never influences a real token, so no attention mask is needed.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace leap::model {

struct TokenBatch {
  int B = 0;                     // sequences
  int T = 0;                     // padded length: max of lengths
  std::vector<int32_t> tokens;   // (B, T); padding holds pad_id
  std::vector<int32_t> lengths;  // (B); 1 <= lengths[b] <= T

  // Pads `seqs` (each non-empty) with pad_id. T = the longest sequence.
  static TokenBatch from_sequences(const std::vector<std::vector<int32_t>>& seqs,
                                   int32_t pad_id = 0);
  int32_t at(int b, int t) const { return tokens[static_cast<size_t>(b) * T + t]; }

  // Every real token in [0, vocab_size), every length in [1, T]; names the bad (b, t).
  Status validate(int vocab_size) const;
};

}  // namespace leap::model
