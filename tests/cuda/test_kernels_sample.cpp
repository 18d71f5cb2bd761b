// Token selection on the device (cuda/kernels/sample.cuh) in the PTX interpreter against the
// host rule (backend/token_select.h, what the sampler's CPU path runs): for fp32 and bf16
// logits (bf16 rounding makes many ties, so the id tie-break is exercised), rows wider than the
// block, a -0/+0 tie at the maximum, greedy, plain sampling (id order), top-k (1 included),
// top-p, both, ids restricted by sample_below, and a padded id far above the drawable ones
// (weights measured from the drawable maximum, or every one would underflow). The chosen ids must
// be the same; the log-probabilities agree to fp32 rounding.
#include <algorithm>
#include <cmath>

#include "backend/token_select.h"
#include "kernel_lab.h"

namespace leap::cuda::testing {
namespace {

template <class TypeParam>
class SampleKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  KernelLab lab;
};

using StorageTypes = ::testing::Types<F32, BF16>;
TYPED_TEST_SUITE(SampleKernels, StorageTypes);

struct Case {
  const char* what;
  backend::TokenRule rule;
  int sample_below;  // 0: all
};

TYPED_TEST(SampleKernels, ChoosesWhatTheHostRuleChooses) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("sample.cuh", {inst<TypeParam>("sample_rows")});
  const unsigned threads = unsigned(this->lab.probe("sample.cuh", {"kSampleThreads"})[0]);
  const int N = 7, V = 1499;  // more ids than threads, not a multiple of 32
  auto logits = randn(size_t(N) * V, 41, bf, 2.5f);
  logits[size_t(1) * V + 700] = 12.0f;  // row 1: one dominant logit
  for (int v = 0; v < V; ++v)  // row 2: -0 and +0 are the maximum, tied: the lower id wins
    logits[size_t(2) * V + v] = -std::fabs(logits[size_t(2) * V + v]) - 0.125f;
  logits[size_t(2) * V + 3] = -0.0f;
  logits[size_t(2) * V + 9] = 0.0f;
  logits[size_t(4) * V + 1400] = 30.0f;  // row 4: a padded id (above 1100) far above the rest:
                                         // the weights are measured from the drawable maximum
  // Row 6: five drawable logits and every other id at -1000 (weight 0), with the largest uniform
  // below 1, which rounding carries past every weight in the host's order (token_select.cpp's
  // test row): both take the last candidate of nonzero weight, never an id of probability 0.
  const float row6[5] = {0.04630350321531296f, 2.4611103534698486f, -1.8609015941619873f, -1.2950438261032104f,
                         2.8407084941864014f};
  for (int v = 0; v < V; ++v) logits[size_t(6) * V + v] = v < 5 ? row6[v] : -1000.0f;
  for (int v = 0; v < V; ++v)  // row 3: 11 distinct values, ties everywhere
    logits[size_t(3) * V + v] = float(v % 11) * 0.25f;
  // Row 3 repeats every 11 ids, so a uniform of k/100 would land exactly on a boundary (1100 ids
  // are 100 periods), where the two summation orders may round either way: 0.6137 does not.
  const std::vector<double> uniforms = {0.37, 0.0, 0.9999999, 0.6137, 0.05, 0.83, std::nextafter(1.0, 0.0)};

  const std::vector<Case> cases = {
      {"greedy", {.temperature = 0.0}, 0},
      {"temperature 0.7 (id order)", {.temperature = 0.7}, 0},
      {"temperature 1.3, top_k >= n (id order)", {.temperature = 1.3, .top_k = V}, 0},
      {"top_k 40", {.temperature = 1.0, .top_k = 40}, 0},
      {"top_p 0.9", {.temperature = 0.8, .top_p = 0.9}, 0},
      {"top_k 300 then top_p 0.75", {.temperature = 1.0, .top_p = 0.75, .top_k = 300}, 0},
      {"top_p 0 (the most likely only)", {.temperature = 1.0, .top_p = 0.0}, 0},
      {"top_k 1", {.temperature = 1.0, .top_k = 1}, 0},
      {"greedy below 1100", {.temperature = 0.0}, 1100},
      {"temperature 1.0 below 1100 (id order)", {.temperature = 1.0}, 1100},
      {"temperature 0.001 below 1100", {.temperature = 0.001}, 1100},
      {"top_k 5 below 1100", {.temperature = 1.0, .top_k = 5}, 1100},
      {"top_p 0.95 below 1100", {.temperature = 0.6, .top_p = 0.95}, 1100},
  };
  const uint64_t dz = this->lab.put(bf, logits), du = this->lab.put_raw(uniforms);
  // The host rule reads what the kernel reads: logits rounded to the storage type.
  const std::vector<float> stored = this->lab.get(bf, dz, logits.size());
  int differing_from_greedy = 0;
  for (const Case& c : cases) {
    const uint64_t dids = this->lab.put_raw(std::vector<int32_t>(N, -1)),
                   dlp = this->lab.put(false, std::vector<float>(N));
    const int n_draw = c.sample_below > 0 ? c.sample_below : V;
    this->lab.run(inst<TypeParam>("sample_rows"), grid3(N, 1, 1, threads),
                  Args()
                      .ptr(dids)
                      .ptr(dlp)
                      .ptr(dz)
                      .ptr(du)
                      .add<int>(N)
                      .add<int>(V)
                      .add<int>(n_draw)
                      .add<double>(c.rule.temperature)
                      .add<int>(c.rule.top_k)
                      .add<double>(c.rule.top_p));
    const auto ids = this->lab.template get_raw<int32_t>(dids, N);
    const auto lps = this->lab.get(false, dlp, N);
    for (int r = 0; r < N; ++r) {
      float want_lp = 0;
      const int32_t want = backend::select_token(stored.data() + size_t(r) * V, V, c.rule,
                                                 uniforms[r], &want_lp, c.sample_below);
      EXPECT_EQ(ids[r], want) << c.what << ", row " << r;
      if (r == 2 && (c.rule.temperature == 0.0 || c.rule.top_k == 1)) {
        EXPECT_EQ(want, 3) << c.what << ": -0 (id 3) ties +0 (id 9)";
      }
      if (r == 4 && c.rule.temperature == 0.001) {  // at T = 0.001, in effect the drawable argmax
        float g = 0;
        EXPECT_EQ(want, backend::select_token(stored.data() + size_t(r) * V, V, {.temperature = 0.0}, 0.0, &g, 1100))
            << "not the last candidate's fallback";
      }
      // Relative: at temperature 0.001 a log-probability is s * logit - lse with s = 1000.
      EXPECT_NEAR(lps[r], want_lp, 1e-5 * std::max(1.0f, std::fabs(want_lp)))
          << c.what << ", row " << r;
      float greedy_lp = 0;
      if (want != backend::select_token(stored.data() + size_t(r) * V, V, {.temperature = 0.0},
                                        0.0, &greedy_lp, c.sample_below))
        ++differing_from_greedy;
    }
  }
  // The cases draw, rather than all collapsing onto the maximum.
  EXPECT_GT(differing_from_greedy, 15);
}

}  // namespace
}  // namespace leap::cuda::testing
