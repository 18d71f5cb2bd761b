// The fused log-softmax + gather kernels (cuda/kernels/logprob.cuh) in the PTX interpreter
// against the CPU backend, for fp32 and bf16 logits: a vocabulary wider than the block and
// than one backward chunk, masked rows (target -1) and a row with zero upstream gradient, at
// inverse temperatures 1 and 2; and the same over vocabulary chunks, each in its own (N, Vc)
// buffer as the LM head makes them, at inverse temperature 1/0.7.
#include <algorithm>

#include "backend/cpu_backend.h"
#include "kernel_lab.h"

namespace leap::cuda::testing {
namespace {

template <class TypeParam>
class LogprobKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  KernelLab lab;
  backend::CpuBackend cpu{1};
};

using StorageTypes = ::testing::Types<F32, BF16>;
TYPED_TEST_SUITE(LogprobKernels, StorageTypes);

TYPED_TEST(LogprobKernels, ForwardAndAccumulatedBackward) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("logprob.cuh",
                  {inst<TypeParam>("logprob_forward"), inst<TypeParam>("logprob_backward")});
  const int N = 6, V = 2311;  // > 256 threads per row, and two backward chunks of 2048
  auto logits = randn(size_t(N) * V, 31, bf, 3.0f);
  logits[5] = 25.0f;  // one dominant logit: the online max must rescale what came before
  std::vector<int32_t> targets = {5, -1, 2310, 0, 1234, 77};
  std::vector<float> dlp = {-0.5f, 0.7f, 1.25f, 0.0f, -2.0f, 0.3f};  // row 3: no gradient
  auto dlogits0 = randn(logits.size(), 32, bf);
  const auto g = this->lab.probe("logprob.cuh", {"kLogprobThreads", "kLogprobBackwardChunk"});
  const unsigned threads = unsigned(g[0]), chunk = unsigned(g[1]);
  for (const float s : {1.0f, 2.0f}) {
    SCOPED_TRACE(::testing::Message() << "inverse temperature " << s);
    std::vector<float> lp(N), lse(N), dlogits = dlogits0;
    this->cpu.logprob_forward(lp.data(), lse.data(), logits.data(), targets.data(), N, V, s);
    this->cpu.logprob_backward(dlogits.data(), dlp.data(), logits.data(), lse.data(),
                               targets.data(), N, V, s);

    const uint64_t dz = this->lab.put(bf, logits), dt = this->lab.put_raw(targets);
    const uint64_t dlp_out = this->lab.put(false, std::vector<float>(N)),
                   dlse = this->lab.put(false, std::vector<float>(N));
    this->lab.run(
        inst<TypeParam>("logprob_forward"), grid3(N, 1, 1, threads),
        Args().ptr(dlp_out).ptr(dlse).ptr(dz).ptr(dt).add<int>(N).add<int>(V).add<float>(s));
    auto got_lp = this->lab.get(false, dlp_out, N);
    expect_nmse("logprob_forward lse (fp32)", this->lab.get(false, dlse, N), lse, F32::kTol);
    expect_nmse("logprob_forward logprobs (fp32)", got_lp, lp, F32::kTol);
    EXPECT_EQ(got_lp[1], 0.0f) << "a masked row has log-probability 0";

    // The backward reads the CPU's lse, so it is checked on its own.
    const uint64_t dg = this->lab.put(false, dlp), dl = this->lab.put(false, lse),
                   ddz = this->lab.put(bf, dlogits0);
    this->lab.run(
        inst<TypeParam>("logprob_backward"), grid3(N, (V + chunk - 1) / chunk, 1, threads),
        Args().ptr(ddz).ptr(dg).ptr(dz).ptr(dl).ptr(dt).add<int>(N).add<int>(V).add<float>(s));
    auto got = this->lab.get(bf, ddz, dlogits.size());
    expect_nmse("logprob_backward (accumulated)", got, dlogits, TypeParam::kTol);
    // Masked rows and rows without gradient are left exactly as they were.
    for (int n : {1, 3})
      for (int v = 0; v < V; ++v)
        ASSERT_EQ(got[size_t(n) * V + v], dlogits0[size_t(n) * V + v]) << n << "," << v;
  }
}

// The row-major (N, V) logits cut into column chunks [v0, v0 + Vc), each (N, Vc).
std::vector<float> columns(const std::vector<float>& z, int N, int V, int v0, int Vc) {
  std::vector<float> c(size_t(N) * Vc);
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < Vc; ++j) c[size_t(n) * Vc + j] = z[size_t(n) * V + v0 + j];
  return c;
}

TYPED_TEST(LogprobKernels, VocabularyChunksMatchTheWholeRow) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("logprob.cuh", {inst<TypeParam>("logprob_chunk_forward"),
                                  inst<TypeParam>("logprob_chunk_backward")});
  const int N = 5, V = 2311, kChunk = 1000;  // chunks of 1000, 1000, 311
  const auto g = this->lab.probe("logprob.cuh", {"kLogprobThreads", "kLogprobBackwardChunk"});
  const unsigned threads = unsigned(g[0]), chunk = unsigned(g[1]);
  auto logits = randn(size_t(N) * V, 33, bf, 3.0f);
  logits[size_t(2) * V + 1500] = 30.0f;  // row 2's max arrives in the second chunk
  std::vector<int32_t> targets = {999, 1000, 2310, -1, 0};  // on chunk edges, masked
  std::vector<float> dlp = {0.5f, -1.5f, 0.25f, 0.9f, -0.75f};
  auto dlogits0 = randn(logits.size(), 34, bf);
  const float s = 1.0f / 0.7f;
  std::vector<float> lp(N), lse(N), dlogits = dlogits0;
  this->cpu.logprob_forward(lp.data(), lse.data(), logits.data(), targets.data(), N, V, s);
  this->cpu.logprob_backward(dlogits.data(), dlp.data(), logits.data(), lse.data(), targets.data(),
                             N, V, s);

  const uint64_t dt = this->lab.put_raw(targets), dg = this->lab.put(false, dlp);
  const uint64_t dlp_out = this->lab.put(false, std::vector<float>(N)),
                 dlse = this->lab.put(false, std::vector<float>(N)),
                 run_sum = this->lab.put(false, std::vector<float>(N));
  for (int v0 = 0; v0 < V; v0 += kChunk) {
    const int Vc = std::min(kChunk, V - v0);
    const uint64_t dz = this->lab.put(bf, columns(logits, N, V, v0, Vc));
    this->lab.run(inst<TypeParam>("logprob_chunk_forward"), grid3(N, 1, 1, threads),
                  Args()
                      .ptr(dlp_out)
                      .ptr(dlse)
                      .ptr(run_sum)
                      .ptr(dz)
                      .ptr(dt)
                      .add<int>(N)
                      .add<int>(Vc)
                      .add<int>(Vc)
                      .add<int>(v0)
                      .add<int>(V)
                      .add<float>(s));
  }
  auto got_lse = this->lab.get(false, dlse, N);
  expect_nmse("logprob_chunk_forward lse (fp32)", got_lse, lse, F32::kTol);
  expect_nmse("logprob_chunk_forward logprobs (fp32)", this->lab.get(false, dlp_out, N), lp,
              F32::kTol);

  // Backward chunk by chunk from the kernels' own lse; the chunks reassemble the whole row.
  const uint64_t dl = this->lab.put(false, got_lse);
  std::vector<float> got(dlogits.size());
  for (int v0 = 0; v0 < V; v0 += kChunk) {
    const int Vc = std::min(kChunk, V - v0);
    const uint64_t dz = this->lab.put(bf, columns(logits, N, V, v0, Vc)),
                   ddz = this->lab.put(bf, columns(dlogits0, N, V, v0, Vc));
    this->lab.run(inst<TypeParam>("logprob_chunk_backward"),
                  grid3(N, (Vc + chunk - 1) / chunk, 1, threads),
                  Args()
                      .ptr(ddz)
                      .ptr(dg)
                      .ptr(dz)
                      .ptr(dl)
                      .ptr(dt)
                      .add<int>(N)
                      .add<int>(Vc)
                      .add<int>(Vc)
                      .add<int>(v0)
                      .add<float>(s));
    auto part = this->lab.get(bf, ddz, size_t(N) * Vc);
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < Vc; ++j) got[size_t(n) * V + v0 + j] = part[size_t(n) * Vc + j];
  }
  expect_nmse("logprob_chunk_backward (accumulated)", got, dlogits, TypeParam::kTol);
}

}  // namespace
}  // namespace leap::cuda::testing
