// The CUDA backend's element-wise and row kernels (cast, residual, SwiGLU, RoPE, embedding,
// RMSNorm, AdamW, sum of squares), each run in the PTX interpreter on small odd shapes and
// compared with the CPU backend, for fp32 and bf16 storage. Backward kernels start from
// pre-filled gradients, so a kernel that overwrote instead of accumulating would fail.
#include <algorithm>
#include <cmath>
#include <map>

#include "backend/cpu_backend.h"
#include "kernel_lab.h"

namespace leap::cuda::testing {
namespace {

// Element-wise kernels take any grid (grid-stride loops); a few blocks of 256 threads make the
// loops wrap on these sizes.
constexpr unsigned kThreads = 256;
LaunchDims few_blocks() {
  return grid3(3, 1, 1, kThreads);
}

template <class TypeParam>
class PointwiseKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  static constexpr bool kBf16 = TypeParam::kBf16;
  static constexpr double kTol = TypeParam::kTol;
  // What storing x as the kernel's type gives.
  static std::vector<float> stored(std::vector<float> x) {
    if (kBf16)
      for (auto& v : x) v = round_bf16(v);
    return x;
  }
  KernelLab lab;
  backend::CpuBackend cpu{1};
};

using StorageTypes = ::testing::Types<F32, BF16>;
TYPED_TEST_SUITE(PointwiseKernels, StorageTypes);

TYPED_TEST(PointwiseKernels, CastBothWaysIsExactRounding) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("cast.cuh", {inst<TypeParam>("cast_from_f32"), inst<TypeParam>("cast_to_f32")});
  const size_t n = 1003;
  auto x = randn(n, 1, false, 3.0f);
  x[0] = 1.0f + 1.0f / 256;  // a bf16 tie: rounds to even (1.0)
  const uint64_t in = this->lab.put(false, x), out = this->lab.put(bf, std::vector<float>(n));
  this->lab.run(inst<TypeParam>("cast_from_f32"), few_blocks(),
                Args().ptr(out).ptr(in).add<uint64_t>(n));
  auto got = this->lab.get(bf, out, n);
  // Exact: the narrowing is round-to-nearest-even, as the host's converter does it.
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], bf ? round_bf16(x[i]) : x[i]) << i;
  if (bf) {
    ASSERT_EQ(got[0], 1.0f);
  }
  const uint64_t back = this->lab.put(false, std::vector<float>(n));
  this->lab.run(inst<TypeParam>("cast_to_f32"), few_blocks(),
                Args().ptr(back).ptr(out).add<uint64_t>(n));
  ASSERT_EQ(this->lab.get(false, back, n), got);
}

TYPED_TEST(PointwiseKernels, ResidualAddInPlace) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("residual.cuh", {inst<TypeParam>("add_forward")});
  const size_t n = 777;
  auto a = randn(n, 2, bf), b = randn(n, 3, bf);
  std::vector<float> want(n);
  this->cpu.add_forward(want.data(), a.data(), b.data(), n);
  const uint64_t da = this->lab.put(bf, a), db = this->lab.put(bf, b);
  // out aliases a, as the residual stream uses it.
  this->lab.run(inst<TypeParam>("add_forward"), few_blocks(),
                Args().ptr(da).ptr(da).ptr(db).add<uint64_t>(n));
  expect_nmse("add_forward (out = a)", this->lab.get(bf, da, n), want, this->kTol);
}

TYPED_TEST(PointwiseKernels, SwigluForwardBackward) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("swiglu.cuh",
                  {inst<TypeParam>("swiglu_forward"), inst<TypeParam>("swiglu_backward")});
  const int N = 7, I = 45;
  auto inp = randn(size_t(N) * 2 * I, 4, bf, 2.0f), dout = randn(size_t(N) * I, 5, bf);
  auto dinp0 = randn(size_t(N) * 2 * I, 6, bf);
  std::vector<float> out(size_t(N) * I), dinp = dinp0;
  this->cpu.swiglu_forward(out.data(), inp.data(), N, I);
  this->cpu.swiglu_backward(dinp.data(), dout.data(), inp.data(), N, I);

  const uint64_t di = this->lab.put(bf, inp), dout_d = this->lab.put(bf, dout);
  const uint64_t o = this->lab.put(bf, std::vector<float>(out.size())),
                 g = this->lab.put(bf, dinp0);
  this->lab.run(inst<TypeParam>("swiglu_forward"), few_blocks(),
                Args().ptr(o).ptr(di).add<int>(N).add<int>(I));
  this->lab.run(inst<TypeParam>("swiglu_backward"), few_blocks(),
                Args().ptr(g).ptr(dout_d).ptr(di).add<int>(N).add<int>(I));
  expect_nmse("swiglu_forward", this->lab.get(bf, o, out.size()), out, this->kTol);
  expect_nmse("swiglu_backward (accumulated)", this->lab.get(bf, g, dinp.size()), dinp, this->kTol);
}

TYPED_TEST(PointwiseKernels, RopeForwardInPlaceAndBackward) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("rope.cuh", {inst<TypeParam>("rope_forward"), inst<TypeParam>("rope_backward")});
  const int N = 9, H = 3, D = 12, maxT = 20, half = D / 2;
  std::vector<float> cos_t(size_t(maxT) * half), sin_t(cos_t.size());
  for (int t = 0; t < maxT; ++t)
    for (int i = 0; i < half; ++i) {
      const double a = t * std::pow(10000.0, -2.0 * i / D);
      cos_t[size_t(t) * half + i] = static_cast<float>(std::cos(a));
      sin_t[size_t(t) * half + i] = static_cast<float>(std::sin(a));
    }
  std::vector<int32_t> pos = {0, 5, 19, 3, 3, 11, 1, 18, 7};
  auto x = randn(size_t(N) * H * D, 7, bf), dy = randn(x.size(), 8, bf);
  auto dx0 = randn(x.size(), 9, bf);
  std::vector<float> y(x.size()), dx = dx0;
  this->cpu.rope_forward(y.data(), x.data(), cos_t.data(), sin_t.data(), pos.data(), N, H, D);
  this->cpu.rope_backward(dx.data(), dy.data(), cos_t.data(), sin_t.data(), pos.data(), N, H, D);

  const uint64_t dc = this->lab.put(false, cos_t), ds = this->lab.put(false, sin_t),
                 dp = this->lab.put_raw(pos);
  const uint64_t dxy = this->lab.put(bf, x);  // rotated in place
  const uint64_t ddy = this->lab.put(bf, dy), ddx = this->lab.put(bf, dx0);
  auto args = [&](uint64_t o, uint64_t i) {
    return Args().ptr(o).ptr(i).ptr(dc).ptr(ds).ptr(dp).add<int>(N).add<int>(H).add<int>(D);
  };
  this->lab.run(inst<TypeParam>("rope_forward"), few_blocks(), args(dxy, dxy));
  this->lab.run(inst<TypeParam>("rope_backward"), few_blocks(), args(ddx, ddy));
  expect_nmse("rope_forward (out = inp)", this->lab.get(bf, dxy, x.size()), y, this->kTol);
  expect_nmse("rope_backward (accumulated)", this->lab.get(bf, ddx, x.size()), dx, this->kTol);
}

// The CSR grouping embedding_backward takes: distinct tokens, and each one's rows in order.
struct TokenRows {
  std::vector<int32_t> uniq, offsets, rows;
};
TokenRows group_rows_by_token(const std::vector<int32_t>& tokens) {
  std::map<int32_t, std::vector<int32_t>> by_token;
  for (size_t n = 0; n < tokens.size(); ++n) by_token[tokens[n]].push_back(int32_t(n));
  TokenRows g;
  g.offsets.push_back(0);
  for (const auto& [tok, rows] : by_token) {
    g.uniq.push_back(tok);
    g.rows.insert(g.rows.end(), rows.begin(), rows.end());
    g.offsets.push_back(int32_t(g.rows.size()));
  }
  return g;
}

TYPED_TEST(PointwiseKernels, EmbeddingForwardBackwardWithRepeatedTokens) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("embedding.cuh",
                  {inst<TypeParam>("embedding_forward"), inst<TypeParam>("embedding_backward")});
  const int N = 13, C = 300, V = 11;  // C > 256: two column blocks
  std::vector<int32_t> tokens = {3, 0, 10, 3, 3, 7, 0, 5, 10, 2, 3, 9, 1};
  auto wte = randn(size_t(V) * C, 10, bf), dout = randn(size_t(N) * C, 11, bf);
  auto dwte0 = randn(wte.size(), 12, false);  // fp32 gradient, pre-filled
  std::vector<float> out(size_t(N) * C), dwte = dwte0;
  this->cpu.embedding_forward(out.data(), tokens.data(), wte.data(), N, C);
  this->cpu.embedding_backward(dwte.data(), dout.data(), tokens.data(), N, C);

  const uint64_t dtok = this->lab.put_raw(tokens), dw = this->lab.put(bf, wte);
  const uint64_t o = this->lab.put(bf, std::vector<float>(out.size()));
  this->lab.run(inst<TypeParam>("embedding_forward"), few_blocks(),
                Args().ptr(o).ptr(dtok).ptr(dw).add<int>(N).add<int>(C));
  ASSERT_EQ(this->lab.get(bf, o, out.size()), out);  // a gather is exact

  const TokenRows g = group_rows_by_token(tokens);
  const uint64_t du = this->lab.put_raw(g.uniq), doff = this->lab.put_raw(g.offsets),
                 drows = this->lab.put_raw(g.rows);
  const uint64_t ddo = this->lab.put(bf, dout), ddw = this->lab.put(false, dwte0);
  const unsigned U = unsigned(g.uniq.size());
  const unsigned threads =
      unsigned(this->lab.probe("embedding.cuh", {"kEmbeddingBackwardThreads"})[0]);
  this->lab.run(inst<TypeParam>("embedding_backward"),
                grid3(U, (C + threads - 1) / threads, 1, threads),
                Args().ptr(ddw).ptr(ddo).ptr(du).ptr(doff).ptr(drows).add<int>(C));
  expect_nmse("embedding_backward (accumulated)", this->lab.get(false, ddw, dwte.size()), dwte,
              F32::kTol);
}

// A model whose matrices are kept in bf16 only (optim.master_weights = optimizer) looks its
// fp32 rows up in a bf16 table: widened exactly, so the CPU on the rounded table is the answer.
TEST(EmbeddingKernel, Bf16TableIntoFp32Rows) {
  if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  KernelLab lab;
  backend::CpuBackend cpu{1};
  const std::string kernel = "embedding_forward<float, __nv_bfloat16>";
  lab.build("embedding.cuh", {kernel});
  const int N = 9, C = 301, V = 7;
  std::vector<int32_t> tokens = {6, 0, 3, 6, 1, 0, 5, 2, 6};
  auto wte = randn(size_t(V) * C, 20, true);  // bf16 values
  std::vector<float> out(size_t(N) * C);
  cpu.embedding_forward(out.data(), tokens.data(), wte.data(), N, C);
  const uint64_t dtok = lab.put_raw(tokens), dw = lab.put(true, wte);
  const uint64_t o = lab.put(false, std::vector<float>(out.size()));
  lab.run(kernel, few_blocks(), Args().ptr(o).ptr(dtok).ptr(dw).add<int>(N).add<int>(C));
  ASSERT_EQ(lab.get(false, o, out.size()), out);
}

TYPED_TEST(PointwiseKernels, RmsnormForwardBackward) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("rmsnorm.cuh",
                  {inst<TypeParam>("rmsnorm_forward"), inst<TypeParam>("rmsnorm_backward"),
                   inst<TypeParam>("rmsnorm_backward_dweight_partial"),
                   "rmsnorm_backward_dweight_finish"});
  const int N = 6, C = 333;  // C > block size, and not a multiple of 32
  const float eps = 1e-5f;
  auto x = randn(size_t(N) * C, 13, bf, 1.5f), w = randn(C, 14, bf), dy = randn(x.size(), 15, bf);
  auto dx0 = randn(x.size(), 16, bf), dw0 = randn(C, 17, false);
  std::vector<float> y(x.size()), rstd(N), dx = dx0, dw = dw0;
  this->cpu.rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, eps);
  this->cpu.rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N,
                             C);

  const unsigned threads = unsigned(this->lab.probe("rmsnorm.cuh", {"kRmsnormThreads"})[0]);
  const uint64_t dxin = this->lab.put(bf, x), dwt = this->lab.put(bf, w);
  const uint64_t o = this->lab.put(bf, std::vector<float>(y.size())),
                 dr = this->lab.put(false, std::vector<float>(N));
  this->lab.run(inst<TypeParam>("rmsnorm_forward"), grid3(N, 1, 1, threads),
                Args().ptr(o).ptr(dr).ptr(dxin).ptr(dwt).add<int>(N).add<int>(C).add<float>(eps));
  expect_nmse("rmsnorm_forward out", this->lab.get(bf, o, y.size()), y, this->kTol);
  expect_nmse("rmsnorm_forward rstd (fp32)", this->lab.get(false, dr, N), rstd, F32::kTol);

  // The backward reads the CPU's rstd, so the two halves are checked independently.
  const uint64_t drs = this->lab.put(false, rstd), ddy = this->lab.put(bf, dy);
  const uint64_t ddx = this->lab.put(bf, dx0);
  this->lab.run(inst<TypeParam>("rmsnorm_backward"), grid3(N, 1, 1, threads),
                Args().ptr(ddx).ptr(ddy).ptr(dxin).ptr(dwt).ptr(drs).add<int>(N).add<int>(C));
  expect_nmse("rmsnorm_backward dinp (accumulated)", this->lab.get(bf, ddx, dx.size()), dx,
              this->kTol);
  // The weight gradient in chunks of 4 rows (two chunks, the last one short) and in one chunk.
  for (const int rows_per_chunk : {4, 256}) {
    const int chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
    const uint64_t dwd = this->lab.put(false, dw0),
                   part = this->lab.put(false, std::vector<float>(size_t(chunks) * C));
    this->lab.run(inst<TypeParam>("rmsnorm_backward_dweight_partial"),
                  grid3((C + 31) / 32, chunks, 1, threads),
                  Args().ptr(part).ptr(ddy).ptr(dxin).ptr(drs).add<int>(N).add<int>(C).add<int>(
                      rows_per_chunk));
    this->lab.run("rmsnorm_backward_dweight_finish",
                  grid3((C + threads - 1) / threads, 1, 1, threads),
                  Args().ptr(dwd).ptr(part).add<int>(chunks).add<int>(C));
    expect_nmse("rmsnorm_backward dweight (fp32, accumulated, chunks of " +
                    std::to_string(rows_per_chunk) + ")",
                this->lab.get(false, dwd, C), dw, F32::kTol);
  }
}

TYPED_TEST(PointwiseKernels, AdamwTwoStepsAndComputeCopy) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("adamw.cuh", {inst<TypeParam>("adamw_update")});
  const size_t n = 1001;
  auto p = randn(n, 18, false), g1 = randn(n, 19, false, 0.1f), g2 = randn(n, 20, false, 0.1f);
  std::vector<float> m(n, 0.0f), v(n, 0.0f), pw = p;
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, scale = 0.5f;
  const uint64_t dp = this->lab.put(false, p), dm = this->lab.put(false, m),
                 dv = this->lab.put(false, v), dc = this->lab.put(bf, std::vector<float>(n));
  int t = 0;
  for (const auto* g : {&g1, &g2}) {
    ++t;
    this->cpu.adamw_update(pw.data(), m.data(), v.data(), g->data(), n, lr, b1, b2, eps, wd, scale,
                           t);
    const uint64_t dg = this->lab.put(false, *g);
    this->lab.run(inst<TypeParam>("adamw_update"), few_blocks(),
                  Args()
                      .ptr(dp)
                      .ptr(dm)
                      .ptr(dv)
                      .ptr(dg)
                      .ptr(dc)
                      .add<uint64_t>(n)
                      .add<float>(lr)
                      .add<float>(b1)
                      .add<float>(b2)
                      .add<float>(eps)
                      .add<float>(wd)
                      .add<float>(scale)
                      .add<int>(t));
  }
  expect_nmse("adamw params (fp32 master)", this->lab.get(false, dp, n), pw, F32::kTol);
  expect_nmse("adamw m", this->lab.get(false, dm, n), m, F32::kTol);
  expect_nmse("adamw v", this->lab.get(false, dv, n), v, F32::kTol);
  // The compute copy is the stored type of the kernel's own master weights.
  auto master = this->lab.get(false, dp, n);
  ASSERT_EQ(this->lab.get(bf, dc, n), this->stored(master));
}

TYPED_TEST(PointwiseKernels, SumSquaresInDouble) {
  const bool bf = TypeParam::kBf16;
  this->lab.build("reduce.cuh",
                  {inst<TypeParam>("sum_squares_partial"), "sum_squares_finish<double>"});
  const size_t n = 20011;
  auto x = randn(n, 21, bf, 0.01f);
  const double want = this->cpu.sum_squares(x.data(), n);
  const auto geo = this->lab.probe(
      "reduce.cuh", {"sum_squares_blocks(" + std::to_string(n) + "ull)", "kSumSquaresThreads"});
  const unsigned blocks = unsigned(geo[0]), threads = unsigned(geo[1]);
  ASSERT_GT(blocks, 1u) << "the partial sums should span several blocks";
  const uint64_t dx = this->lab.put(bf, x), part = this->lab.put_raw(std::vector<double>(blocks)),
                 out = this->lab.put_raw(std::vector<double>(1));
  this->lab.run(inst<TypeParam>("sum_squares_partial"), grid3(blocks, 1, 1, threads),
                Args().ptr(part).ptr(dx).add<uint64_t>(n));
  this->lab.run("sum_squares_finish<double>", grid3(1, 1, 1, threads),
                Args().ptr(out).ptr(part).add<int>(int(blocks)));
  const double got = this->lab.template get_raw<double>(out, 1)[0];
  std::printf("  sum_squares got %.17g want %.17g\n", got, want);
  // Both sum exact double squares; only the order of the additions differs.
  EXPECT_NEAR(got, want, 1e-12 * want);
}

// GemmRunner's k = 0 case, D (m, n; column-major, ld > m) = beta D (+ bias), worked by hand:
// beta = 0 must overwrite NaN, the padding rows between columns must stay untouched.
TEST(GemmEmptyEpilogue, ScalesAddsBiasAndKeepsThePadding) {
  if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  KernelLab lab;
  lab.build("gemm_empty.cuh", {"gemm_empty_epilogue<float>"});
  const int m = 3, n = 5, ld = 4;
  const float pad = 7.5f;
  std::vector<float> d(static_cast<size_t>(ld) * n, pad), bias = {1.0f, -2.0f, 0.25f};
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) d[j * ld + i] = static_cast<float>(10 * j + i);
  for (float beta : {0.0f, 0.5f}) {
    for (bool with_bias : {false, true}) {
      std::vector<float> in = d;
      if (beta == 0.0f) in[1 * ld + 2] = std::nanf("");  // must not survive beta = 0
      const uint64_t dd = lab.put(false, in), db = lab.put(false, bias);
      lab.run("gemm_empty_epilogue<float>", grid3(2, 1, 1, 4),
              Args()
                  .ptr(dd)
                  .ptr(with_bias ? db : 0)
                  .add<int>(m)
                  .add<int>(n)
                  .add<int>(ld)
                  .add<float>(beta));
      const auto got = lab.get(false, dd, in.size());
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < ld; ++i) {
          const float want =
              i >= m ? pad
                     : (beta == 0.0f ? 0.0f : beta * (10 * j + i)) + (with_bias ? bias[i] : 0.0f);
          EXPECT_EQ(got[j * ld + i], want)
              << "beta " << beta << " bias " << with_bias << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

}  // namespace
}  // namespace leap::cuda::testing
