// The LM head over chunks of rows (Transformer::set_logits_chunk_bytes) computes what the
// one-chunk head computes: the same log-probs and the same gradients up to float rounding (the
// LM-head gradient is summed chunk by chunk), for chunks that do not divide the rows, a chunk of
// one row, and the SFT step. The one-chunk head is checked against PyTorch by test_model_golden.
// A wrong chunk offset (or a chunk skipped) moves log-probs by O(1), so the tolerances can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu_backend.h"
#include "model/token_batch.h"
#include "model/transformer.h"
#include "test_model_configs.h"

namespace leap::model {
namespace {

ModelConfig config() { return testing::small_config("qwen2", 97, 32, 40, 2, 64); }

TokenBatch batch() {
  std::vector<std::vector<int32_t>> seqs;
  for (int b = 0; b < 3; ++b) {
    std::vector<int32_t> s;
    for (int t = 0; t < 19 - 5 * b; ++t) s.push_back((11 * b + 7 * t + 3) % 97);
    seqs.push_back(s);
  }
  return TokenBatch::from_sequences(seqs);
}

struct Result {
  std::vector<float> logprobs, grads;
};

Result run(size_t chunk_rows) {
  backend::CpuBackend be(1);
  Transformer m(config(), be);
  m.init_random(5, 0.2f);
  m.set_logits_chunk_bytes(chunk_rows * 97 * sizeof(float));
  const TokenBatch tb = batch();
  Result r;
  r.logprobs.resize(static_cast<size_t>(tb.B) * tb.T);
  EXPECT_TRUE(m.forward(tb, r.logprobs.data()).ok());
  std::vector<float> dlp(r.logprobs.size());
  for (size_t i = 0; i < dlp.size(); ++i) dlp[i] = 0.1f * static_cast<float>(static_cast<int>(i % 7) - 3);
  m.zero_grad();
  m.backward(dlp.data());
  r.grads.assign(m.grads(), m.grads() + m.num_params());
  return r;
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-3, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(a[i])));
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return diff / scale;
}

TEST(LogitsChunks, ChunkedHeadEqualsOneChunk) {
  const Result whole = run(1000);  // 3 x 19 = 57 rows: one chunk
  for (size_t rows : {size_t{3}, size_t{10}, size_t{56}}) {
    const Result chunked = run(rows);
    EXPECT_LT(max_rel(whole.logprobs, chunked.logprobs), 1e-6) << rows << " rows a chunk";
    EXPECT_LT(max_rel(whole.grads, chunked.grads), 1e-5) << rows << " rows a chunk";
  }
}

TEST(LogitsChunks, RowsAreBoundedByTheBytesAndCoverAPrefill) {
  backend::CpuBackend be(1);
  Transformer m(config(), be);
  m.set_logits_chunk_bytes(10 * 97 * sizeof(float));
  EXPECT_EQ(m.logit_rows(3, 19), 10u);
  EXPECT_EQ(m.logit_rows(1, 4), 4u);     // never more than the batch's rows
  EXPECT_EQ(m.logit_rows(12, 30), 12u);  // a prefill of 12 prompts needs 12 rows at once
  m.set_logits_chunk_bytes(1);
  EXPECT_EQ(m.logit_rows(1, 30), 1u);
}

}  // namespace
}  // namespace leap::model
