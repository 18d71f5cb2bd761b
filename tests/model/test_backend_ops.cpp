// Every backward of the CPU backend against central finite differences of its forward, on
// small odd shapes. The scalar probed is L = sum(r * out) with a fixed random r, so dout = r.
// Also: decode attention against the full causal attention, AdamW against a hand-worked step,
// the LR schedule's shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "backend/cpu_backend.h"
#include "backend/cpu_math.h"
#include "backend/lr_schedule.h"
#include "common/bf16.h"
#include "common/rng.h"

namespace leap::backend {
namespace {

std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * r[i];
  return s;
}

// Compares grad (analytic dL/dx) with central differences of loss() over every entry of x.
void check_fd(const char* what, std::vector<float>& x, const std::vector<float>& grad,
              const std::function<double()>& loss, float h = 1e-2f, double tol = 2e-3) {
  ASSERT_EQ(x.size(), grad.size());
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const double lp = loss();
    x[i] = keep - h;
    const double lm = loss();
    x[i] = keep;
    const double num = (lp - lm) / (2.0 * h);
    max_diff = std::fmax(max_diff, std::fabs(num - grad[i]));
    max_ref = std::fmax(max_ref, std::fabs(num));
  }
  const double rel = max_diff / std::fmax(max_ref, 1e-12);
  std::printf("  %-28s max|diff| %.3e  max|grad| %.3e  rel %.3e\n", what, max_diff, max_ref, rel);
  EXPECT_GT(max_ref, 0.0) << what << ": the probe saw no gradient at all";
  EXPECT_LE(rel, tol) << what;
}

class Ops : public ::testing::Test {
 protected:
  CpuBackend be{2};
};

TEST_F(Ops, MatmulBackward) {
  const int N = 5, IC = 7, OC = 3;
  auto inp = randn(N * IC, 1), w = randn(OC * IC, 2), b = randn(OC, 3), r = randn(N * OC, 4);
  std::vector<float> out(N * OC);
  auto loss = [&] {
    be.matmul_forward(out.data(), inp.data(), w.data(), b.data(), N, IC, OC);
    return dot(out, r);
  };
  std::vector<float> dinp(inp.size(), 0.5f), dw(w.size(), 0.25f),
      db(b.size(), -1.0f);  // += onto these
  be.matmul_backward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), N, IC, OC);
  for (auto& g : dinp) g -= 0.5f;
  for (auto& g : dw) g -= 0.25f;
  for (auto& g : db) g += 1.0f;
  check_fd("matmul dinp", inp, dinp, loss);
  check_fd("matmul dweight", w, dw, loss);
  check_fd("matmul dbias", b, db, loss);
}

TEST_F(Ops, EmbeddingBackwardSumsRepeatedTokens) {
  const int N = 6, C = 4, V = 5;
  std::vector<int32_t> tok = {1, 3, 1, 0, 4, 1};
  auto wte = randn(V * C, 5), r = randn(N * C, 6);
  std::vector<float> out(N * C), dwte(wte.size(), 0.0f);
  auto loss = [&] {
    be.embedding_forward(out.data(), tok.data(), wte.data(), N, C);
    return dot(out, r);
  };
  be.embedding_backward(dwte.data(), r.data(), tok.data(), N, C);
  check_fd("embedding dwte", wte, dwte, loss);
}

TEST_F(Ops, RmsnormBackward) {
  const int N = 4, C = 19;
  auto x = randn(N * C, 7), w = randn(C, 8), r = randn(N * C, 9);
  std::vector<float> out(N * C), rstd(N), dx(x.size(), 0.0f), dw(C, 0.0f);
  auto loss = [&] {
    be.rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    return dot(out, r);
  };
  loss();
  be.rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C);
  check_fd("rmsnorm dinp", x, dx, loss);
  check_fd("rmsnorm dweight", w, dw, loss);
}

TEST_F(Ops, RopeBackward) {
  const int N = 5, H = 3, D = 8, maxT = 9, half = D / 2;
  std::vector<float> cs(maxT * half), sn(maxT * half);
  for (int p = 0; p < maxT; ++p)
    for (int i = 0; i < half; ++i) {
      cs[p * half + i] = std::cos(p * std::pow(100.0f, -2.0f * i / D));
      sn[p * half + i] = std::sin(p * std::pow(100.0f, -2.0f * i / D));
    }
  std::vector<int32_t> pos = {0, 3, 8, 1, 5};
  auto x = randn(N * H * D, 10), r = randn(N * H * D, 11);
  std::vector<float> out(x.size()), dx(x.size(), 0.0f);
  auto loss = [&] {
    be.rope_forward(out.data(), x.data(), cs.data(), sn.data(), pos.data(), N, H, D);
    return dot(out, r);
  };
  be.rope_backward(dx.data(), r.data(), cs.data(), sn.data(), pos.data(), N, H, D);
  check_fd("rope dinp", x, dx, loss);
  // Position 0 is the identity.
  loss();
  for (int i = 0; i < H * D; ++i) EXPECT_EQ(out[i], x[i]);
}

// T = 70 spans two of the backend's 64-row blocks, so the blocked causal path is covered too.
class AttentionOps : public ::testing::TestWithParam<int> {
 protected:
  CpuBackend be{2};
};

TEST_P(AttentionOps, BackwardWithGqa) {
  const int T = GetParam(), B = T > 8 ? 1 : 2, H = 4, Hkv = 2, D = T > 8 ? 4 : 6;
  auto q = randn(B * T * H * D, 12), k = randn(B * T * Hkv * D, 13), v = randn(B * T * Hkv * D, 14);
  auto r = randn(B * T * H * D, 15);
  std::vector<float> out(q.size()), att(static_cast<size_t>(B) * H * T * T);
  auto loss = [&] {
    be.attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
    return dot(out, r);
  };
  loss();
  std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
  be.attention_backward(dq.data(), dk.data(), dv.data(), r.data(), att.data(), q.data(), k.data(),
                        v.data(), B, T, H, Hkv, D);
  check_fd("attention dq", q, dq, loss);
  check_fd("attention dk", k, dk, loss);
  check_fd("attention dv", v, dv, loss);
  // Causality: the first position attends only to itself, so its output is v of position 0.
  for (int d = 0; d < D; ++d) EXPECT_FLOAT_EQ(out[d], v[d]);  // b=0, t=0, h=0 reads kv head 0
  // The saved probabilities are zero above the diagonal and rows sum to one.
  for (int i = 0; i < T; ++i) {
    double sum = 0;
    for (int j = 0; j < T; ++j) {
      if (j > i) {
        EXPECT_EQ(att[static_cast<size_t>(i) * T + j], 0.0f);
      }
      sum += att[static_cast<size_t>(i) * T + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, AttentionOps, ::testing::Values(5, 70));

TEST_F(Ops, DecodeAttentionEqualsFullAttention) {
  const int B = 2, T = 71, H = 6, Hkv = 2, D = 8, maxT = 75;
  auto q = randn(B * T * H * D, 16), k = randn(B * T * Hkv * D, 17), v = randn(B * T * Hkv * D, 18);
  std::vector<float> full(q.size()), att(static_cast<size_t>(B) * H * T * T);
  be.attention_forward(full.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
  // Caches in slot order (slot s holds batch row s), then query each position alone.
  std::vector<float> kc(static_cast<size_t>(B) * maxT * Hkv * D), vc(kc.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < Hkv * D; ++i) {
        kc[(static_cast<size_t>(b) * maxT + t) * Hkv * D + i] =
            k[(static_cast<size_t>(b) * T + t) * Hkv * D + i];
        vc[(static_cast<size_t>(b) * maxT + t) * Hkv * D + i] =
            v[(static_cast<size_t>(b) * T + t) * Hkv * D + i];
      }
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> slot = {1, 0}, len = {t + 1, t + 1};
    std::vector<float> qd(2 * H * D), od(2 * H * D);
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < H * D; ++i)
        qd[r * H * D + i] = q[(static_cast<size_t>(slot[r]) * T + t) * H * D + i];
    be.attention_decode(od.data(), qd.data(), kc.data(), vc.data(), slot.data(), 1, len.data(), 2,
                        maxT, H, Hkv, D, backend::KvDtype::kF32);
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < H * D; ++i)
        EXPECT_NEAR(od[r * H * D + i], full[(static_cast<size_t>(slot[r]) * T + t) * H * D + i],
                    1e-5f);
  }
}

// The same cached positions laid out in scattered blocks of 4 give the contiguous cache's outputs
// bit for bit (the CPU gathers a row's blocks first), so a sample does not depend on where the
// pool put it.
TEST_F(Ops, PagedDecodeAttentionEqualsContiguous) {
  const int slots = 3, maxT = 23, H = 4, Hkv = 2, D = 8, KD = Hkv * D, bs = 4;
  const int per_seq = (maxT + bs - 1) / bs, blocks = slots * per_seq + 2;
  auto kc = randn(static_cast<size_t>(slots) * maxT * KD, 40), vc = randn(kc.size(), 41);
  // Sequence s's logical block j is physical block table[s * per_seq + j]: a scattered
  // assignment over the pool, consecutive (10, 11, 12) for sequence 0's first three blocks.
  std::vector<int32_t> table(static_cast<size_t>(slots) * per_seq);
  std::vector<bool> used(static_cast<size_t>(blocks), false);
  for (size_t i = 0; i < table.size(); ++i) {
    int b = i < 3 ? 10 + static_cast<int>(i) : (static_cast<int>(i) * 7 + 3) % blocks;
    while (used[static_cast<size_t>(b)]) b = (b + 1) % blocks;
    used[static_cast<size_t>(b)] = true;
    table[i] = b;
  }
  std::vector<float> pk(static_cast<size_t>(blocks) * bs * KD, 0.0f), pv(pk.size(), 0.0f);
  for (int sl = 0; sl < slots; ++sl)
    for (int t = 0; t < maxT; ++t)
      for (int i = 0; i < KD; ++i) {
        const size_t at = (static_cast<size_t>(table[sl * per_seq + t / bs]) * bs + t % bs) * KD + i;
        pk[at] = kc[(static_cast<size_t>(sl) * maxT + t) * KD + i];
        pv[at] = vc[(static_cast<size_t>(sl) * maxT + t) * KD + i];
      }
  const int n = 4;
  std::vector<int32_t> slot = {2, 0, 1, 0}, len = {23, 13, 1, 4};
  std::vector<int32_t> rows_table;
  for (int r = 0; r < n; ++r)
    rows_table.insert(rows_table.end(), table.begin() + slot[r] * per_seq,
                      table.begin() + (slot[r] + 1) * per_seq);
  auto q = randn(static_cast<size_t>(n) * H * D, 42);
  std::vector<float> want(q.size()), got(q.size());
  be.attention_decode(want.data(), q.data(), kc.data(), vc.data(), slot.data(), 1, len.data(), n,
                      maxT, H, Hkv, D, backend::KvDtype::kF32);
  be.attention_decode(got.data(), q.data(), pk.data(), pv.data(), rows_table.data(), per_seq,
                      len.data(), n, bs, H, Hkv, D, backend::KvDtype::kF32);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
}

// A bf16 KV cache: kv_cache_write stores each value's bf16 bits (round to nearest even) where
// the fp32 cache stores the value, and decode over it gives, bit for bit, what decode over an
// fp32 cache holding the same rounded values gives (the values are widened exactly, then the
// arithmetic is the fp32 path's), paged or not.
TEST_F(Ops, Bf16KvCacheStoresRoundedBitsAndDecodesThemExactly) {
  const int slots = 2, maxT = 11, H = 4, Hkv = 2, D = 8, KD = Hkv * D, bs = 4;
  const int rows = slots * maxT;
  auto k = randn(static_cast<size_t>(rows) * KD, 50), v = randn(k.size(), 51);
  // Every position of both slots, written in a scattered order.
  std::vector<int32_t> slot(static_cast<size_t>(rows)), pos(slot.size());
  for (int r = 0; r < rows; ++r) {
    const int at = (r * 7) % rows;
    slot[static_cast<size_t>(r)] = at / maxT;
    pos[static_cast<size_t>(r)] = at % maxT;
  }
  std::vector<float> kf(k.size()), vf(k.size()), kb(k.size() / 2), vb(k.size() / 2);
  be.kv_cache_write(kf.data(), vf.data(), k.data(), v.data(), slot.data(), pos.data(), rows, maxT,
                    Hkv, D, backend::KvDtype::kF32);
  be.kv_cache_write(kb.data(), vb.data(), k.data(), v.data(), slot.data(), pos.data(), rows, maxT,
                    Hkv, D, backend::KvDtype::kBf16);
  const auto* kbits = reinterpret_cast<const uint16_t*>(kb.data());
  const auto* vbits = reinterpret_cast<const uint16_t*>(vb.data());
  for (size_t i = 0; i < kf.size(); ++i) {
    ASSERT_EQ(kbits[i], f32_to_bf16(kf[i])) << i;
    ASSERT_EQ(vbits[i], f32_to_bf16(vf[i])) << i;
    kf[i] = bf16_to_f32(kbits[i]);
    vf[i] = bf16_to_f32(vbits[i]);
  }
  const int n = 3;
  std::vector<int32_t> rslot = {1, 0, 1}, len = {11, 6, 1};
  auto q = randn(static_cast<size_t>(n) * H * D, 52);
  std::vector<float> want(q.size()), got(q.size());
  be.attention_decode(want.data(), q.data(), kf.data(), vf.data(), rslot.data(), 1, len.data(), n,
                      maxT, H, Hkv, D, backend::KvDtype::kF32);
  be.attention_decode(got.data(), q.data(), kb.data(), vb.data(), rslot.data(), 1, len.data(), n,
                      maxT, H, Hkv, D, backend::KvDtype::kBf16);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  // Paged: the same cache read as blocks of 4 (a slot of 11 positions has 3 blocks; the last one
  // is partly past the slot's end, which decode never reads).
  std::vector<float> kp(static_cast<size_t>(slots) * 3 * bs * KD / 2), vp(kp.size());
  std::vector<int32_t> table;
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < 3; ++j) table.push_back(rslot[static_cast<size_t>(r)] * 3 + (2 - j));
  for (int sl = 0; sl < slots; ++sl)
    for (int t = 0; t < maxT; ++t) {
      const size_t from = (static_cast<size_t>(sl) * maxT + t) * KD,
                   to = (static_cast<size_t>(sl * 3 + (2 - t / bs)) * bs + t % bs) * KD;
      std::memcpy(reinterpret_cast<uint16_t*>(kp.data()) + to, kbits + from, KD * 2);
      std::memcpy(reinterpret_cast<uint16_t*>(vp.data()) + to, vbits + from, KD * 2);
    }
  std::fill(got.begin(), got.end(), 0.0f);
  be.attention_decode(got.data(), q.data(), kp.data(), vp.data(), table.data(), 3, len.data(), n,
                      bs, H, Hkv, D, backend::KvDtype::kBf16);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
}

TEST_F(Ops, SwigluBackward) {
  const int N = 3, I = 9;
  auto x = randn(N * 2 * I, 19), r = randn(N * I, 20);
  std::vector<float> out(N * I), dx(x.size(), 0.0f);
  auto loss = [&] {
    be.swiglu_forward(out.data(), x.data(), N, I);
    return dot(out, r);
  };
  be.swiglu_backward(dx.data(), r.data(), x.data(), N, I);
  check_fd("swiglu dinp", x, dx, loss);
}

// At inverse temperatures 1 and 2 (sampling at 0.5) and 1/1.3.
TEST_F(Ops, LogprobBackwardAndIgnoredRows) {
  const int N = 4, V = 11;
  for (const float scale : {1.0f, 2.0f, 1.0f / 1.3f}) {
    SCOPED_TRACE(::testing::Message() << "inverse temperature " << scale);
    auto z = randn(N * V, 21, 2.0f), g = randn(N, 22);
    std::vector<int32_t> tgt = {3, -1, 10, 0};
    std::vector<float> lp(N), lse(N), dz(z.size(), 0.0f);
    auto loss = [&] {
      be.logprob_forward(lp.data(), lse.data(), z.data(), tgt.data(), N, V, scale);
      return dot(lp, g);
    };
    loss();
    EXPECT_EQ(lp[1], 0.0f);
    // Against a direct log-softmax of scale * z in double.
    for (int n : {0, 2, 3}) {
      double mx = -1e30, s = 0;
      for (int v = 0; v < V; ++v) mx = std::fmax(mx, scale * double(z[n * V + v]));
      for (int v = 0; v < V; ++v) s += std::exp(scale * double(z[n * V + v]) - mx);
      EXPECT_NEAR(lp[n], scale * double(z[n * V + tgt[n]]) - mx - std::log(s), 1e-5);
    }
    be.logprob_backward(dz.data(), g.data(), z.data(), lse.data(), tgt.data(), N, V, scale);
    for (int v = 0; v < V; ++v) EXPECT_EQ(dz[V + v], 0.0f);
    check_fd("logprob dlogits", z, dz, loss);
  }
}

TEST_F(Ops, AdamWMatchesHandWorkedStep) {
  // t=1: m = (1-b1) g, v = (1-b2) g^2, m_hat = g, v_hat = g^2 -> step = lr * g/(|g| + eps).
  std::vector<float> p = {1.0f, -2.0f}, m(2, 0.0f), v(2, 0.0f), g = {0.5f, -4.0f};
  be.adamw_update(p.data(), m.data(), v.data(), g.data(), 2, 0.1f, 0.9f, 0.95f, 0.0f, 0.5f, 1.0f,
                  1);
  EXPECT_NEAR(p[0], 1.0f * (1 - 0.05f) - 0.1f, 1e-6);
  EXPECT_NEAR(p[1], -2.0f * (1 - 0.05f) + 0.1f, 1e-6);
  EXPECT_NEAR(be.sum_squares(g.data(), 2), 16.25, 1e-12);
}

// alloc_weights: what is written into the bf16 part holds bf16 values (rounded to nearest even,
// by hand here), the fp32 tail what was written; a freed buffer's part no longer rounds.
TEST_F(Ops, WeightsWithABf16PartRoundWhatIsWrittenThere) {
  const size_t n = 10, part = 6;
  const float tie = 1.0f + 1.0f / 256;  // halfway between two bf16 values: rounds to even, 1.0
  const float up = 1.0f + 3.0f / 512;   // above the halfway point: rounds up, 1 + 1/128
  std::vector<float> host(n, tie);
  host[1] = up;
  float* w = be.alloc_weights(n, part);
  be.upload(w, host.data(), n);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 1.0f + 1.0f / 128);
  EXPECT_EQ(w[part - 1], 1.0f);
  EXPECT_EQ(w[part], tie) << "the fp32 tail is rounded";
  std::vector<float> src(3, up);
  be.copy(w + part - 2, src.data(), 3);  // across the end of the part
  EXPECT_EQ(w[part - 2], 1.0f + 1.0f / 128);
  EXPECT_EQ(w[part], up);
  std::vector<float> m(2, 0.0f), v(2, 0.0f), g = {0.5f, -4.0f};
  be.adamw_update(w, m.data(), v.data(), g.data(), 2, 1e-2f, 0.9f, 0.95f, 0.0f, 0.0f, 1.0f, 1);
  EXPECT_EQ(w[0], bf16_to_f32(f32_to_bf16(w[0])));
  EXPECT_NE(w[0], 1.0f) << "the update should move the weight by more than half a bf16 step";
  be.free_floats(w);
  float* plain = be.alloc_floats(n);  // may reuse the address
  be.upload(plain, host.data(), n);
  EXPECT_EQ(plain[0], tie);
  be.free_floats(plain);
}

TEST(LrSchedule, WarmupThenCosine) {
  LrSchedule s{.peak_lr = 1.0, .min_lr = 0.1, .warmup_steps = 4, .total_steps = 14};
  EXPECT_DOUBLE_EQ(s.at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_NEAR(s.at(9), 0.55, 1e-12);  // half-way down the cosine
  EXPECT_DOUBLE_EQ(s.at(14), 0.1);
  EXPECT_DOUBLE_EQ(s.at(100), 0.1);
}

}  // namespace
}  // namespace leap::backend

namespace leap::backend {
namespace {

TEST(ExpFast, RelativeErrorAgainstLibm) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.01237f) {
    double want = std::exp(static_cast<double>(x));
    worst = std::fmax(worst, std::fabs(exp_fast(x) - want) / want);
  }
  EXPECT_LE(worst, 3e-7);
  EXPECT_EQ(exp_fast(0.0f), 1.0f);
  EXPECT_LT(exp_fast(-1000.0f), 1e-37f);  // clamped, never NaN or negative
  EXPECT_GE(exp_fast(-1000.0f), 0.0f);
}

}  // namespace
}  // namespace leap::backend

namespace leap::backend {
namespace {

// Sizes large enough that the ops fork threads (and call sgemm from several threads at once):
// the per-(sequence, head) work is the same whatever the thread count, so the results are
// bit-identical between one and two threads.
TEST(Threads, AttentionIsIdenticalOnOneAndTwoThreads) {
  const int B = 2, T = 260, H = 4, Hkv = 2, D = 16;  // B*H*T*T*D/2 > 4M: the ops fork
  auto q = randn(B * T * H * D, 31), k = randn(B * T * Hkv * D, 32), v = randn(B * T * Hkv * D, 33);
  auto dout = randn(B * T * H * D, 34);
  auto run = [&](int threads, std::vector<float>* out, std::vector<float>* grads) {
    CpuBackend be(threads);
    std::vector<float> att(static_cast<size_t>(B) * H * T * T);
    out->assign(q.size(), 0.0f);
    be.attention_forward(out->data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
    std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
    be.attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), att.data(), q.data(),
                          k.data(), v.data(), B, T, H, Hkv, D);
    *grads = dq;
    grads->insert(grads->end(), dk.begin(), dk.end());
    grads->insert(grads->end(), dv.begin(), dv.end());
  };
  std::vector<float> o1, g1, o2, g2;
  run(1, &o1, &g1);
  run(2, &o2, &g2);
  EXPECT_EQ(0, std::memcmp(o1.data(), o2.data(), o1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)));
}

// The threaded GEMM (rows of C split over threads) agrees with the single-threaded one.
TEST(Threads, MatmulAgreesOnOneAndTwoThreads) {
  const int N = 600, IC = 96, OC = 80;  // N*IC*OC > 4M: the GEMMs split over threads
  auto inp = randn(N * IC, 41), w = randn(OC * IC, 42), dout = randn(N * OC, 43);
  auto run = [&](int threads, std::vector<float>* all) {
    CpuBackend be(threads);
    std::vector<float> out(N * OC), dinp(inp.size(), 0.0f), dw(w.size(), 0.0f);
    be.matmul_forward(out.data(), inp.data(), w.data(), nullptr, N, IC, OC);
    be.matmul_backward(dinp.data(), dw.data(), nullptr, dout.data(), inp.data(), w.data(), N, IC,
                       OC);
    *all = out;
    all->insert(all->end(), dinp.begin(), dinp.end());
    all->insert(all->end(), dw.begin(), dw.end());
  };
  std::vector<float> a, b;
  run(1, &a);
  run(2, &b);
  double worst = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::fmax(worst, std::fabs(a[i] - b[i]));
    ref = std::fmax(ref, std::fabs(a[i]));
  }
  EXPECT_LE(worst / ref, 1e-6);
}

}  // namespace
}  // namespace leap::backend
