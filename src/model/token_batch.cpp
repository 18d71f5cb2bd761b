// TokenBatch: padding and validation of token batches.
#include "model/token_batch.h"

#include <fmt/format.h>

#include <algorithm>

namespace leap::model {

TokenBatch TokenBatch::from_sequences(const std::vector<std::vector<int32_t>>& seqs,
                                      int32_t pad_id) {
  TokenBatch b;
  b.B = static_cast<int>(seqs.size());
  for (const auto& s : seqs) b.T = std::max(b.T, static_cast<int>(s.size()));
  b.tokens.assign(static_cast<size_t>(b.B) * b.T, pad_id);
  for (int i = 0; i < b.B; ++i) {
    std::copy(seqs[i].begin(), seqs[i].end(), b.tokens.begin() + static_cast<size_t>(i) * b.T);
    b.lengths.push_back(static_cast<int32_t>(seqs[i].size()));
  }
  return b;
}

Status TokenBatch::validate(int vocab_size) const {
  if (B <= 0 || T <= 0) return invalid_input("empty token batch");
  if (tokens.size() != static_cast<size_t>(B) * T || lengths.size() != static_cast<size_t>(B))
    return invalid_input(fmt::format("token batch arrays do not match B={} T={}", B, T));
  for (int b = 0; b < B; ++b) {
    if (lengths[b] < 1 || lengths[b] > T)
      return invalid_input(
          fmt::format("sequence {} has length {}, outside [1, {}]", b, lengths[b], T));
    for (int t = 0; t < lengths[b]; ++t) {
      int32_t id = at(b, t);
      if (id < 0 || id >= vocab_size)
        return invalid_input(
            fmt::format("token id {} at sequence {} position {} is out of range [0, {})", id, b, t,
                        vocab_size));
    }
  }
  return Status::ok();
}

}  // namespace leap::model
