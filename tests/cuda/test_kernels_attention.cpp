// The attention kernels (cuda/kernels/attention.cuh, attention_decode.cuh) in the PTX
// interpreter against the CPU backend: causal GQA forward with the saved logsumexp, the
// three-launch backward (delta, dk/dv, dq) accumulating into pre-filled gradients, the KV-cache
// write and single-token decode (also with a bf16 cache beside fp32 activations, at head dims
// 40, 64 and 128). Shapes are odd (T not a multiple of the 32-row tiles) and grouped
// (H != Hkv); the training kernels' head dims are 8 (the tiny test model's), 12 and 16, and
// attention_wide.cuh's register-tiled kernels (head dims 64 and 128, 64-row tiles) run the same
// checks.
#include <cmath>

#include "backend/cpu_backend.h"
#include "kernel_lab.h"

namespace leap::cuda::testing {
namespace {

struct Shape {
  int B, T, H, Hkv, D;
};

// A family of training attention kernels: its header, kernel names and launch geometry.
struct Variant {
  std::string header, suffix, threads, tile, fwd_smem, dkdv_smem, dq_smem;
};
const Variant kTiled{"attention.cuh",
                     "",
                     "kAttnThreads",
                     "kAttnBr",
                     "attention_forward_smem_bytes",
                     "attention_dkdv_smem_bytes",
                     "attention_dq_smem_bytes"};
const Variant kWide{"attention_wide.cuh",   "_wide",
                    "kWideThreads",         "kWideTile",
                    "wide_forward_smem_bytes", "wide_dkdv_smem_bytes",
                    "wide_dq_smem_bytes"};

template <class TypeParam>
class AttentionKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  void check_forward_backward(const Shape& s, uint64_t seed, const Variant& var = kTiled);
  KernelLab lab;
  backend::CpuBackend cpu{1};
};

using StorageTypes = ::testing::Types<F32, BF16>;
TYPED_TEST_SUITE(AttentionKernels, StorageTypes);

// logsumexp of each causal row's scaled scores, in double, straight from the definition.
std::vector<float> reference_lse(const std::vector<float>& q, const std::vector<float>& k,
                                 const Shape& s) {
  std::vector<float> lse(size_t(s.B) * s.H * s.T);
  const double scale = 1.0 / std::sqrt(double(s.D));
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h)
      for (int i = 0; i < s.T; ++i) {
        std::vector<double> sc(i + 1);
        double mx = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          double d = 0;
          for (int x = 0; x < s.D; ++x)
            d += double(q[((size_t(b) * s.T + i) * s.H + h) * s.D + x]) *
                 k[((size_t(b) * s.T + j) * s.Hkv + h / (s.H / s.Hkv)) * s.D + x];
          sc[j] = d * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (double v : sc) sum += std::exp(v - mx);
        lse[(size_t(b) * s.H + h) * s.T + i] = float(mx + std::log(sum));
      }
  return lse;
}

template <class TypeParam>
void AttentionKernels<TypeParam>::check_forward_backward(const Shape& s, uint64_t seed,
                                                         const Variant& var) {
  const bool bf = TypeParam::kBf16;
  const std::string d = ", " + std::to_string(s.D);
  const std::string fwd = inst<TypeParam>("attention_forward" + var.suffix, d),
                    dkdv = inst<TypeParam>("attention_backward_dkdv" + var.suffix, d),
                    dq = inst<TypeParam>("attention_backward_dq" + var.suffix, d),
                    delta = inst<TypeParam>("attention_backward_delta");
  lab.build(var.header, {fwd, dkdv, dq, delta});
  // The launch geometry the header documents (an under-sized shared memory would be a memory
  // violation in the interpreter).
  const std::string dim = "(" + std::to_string(s.D) + ")";
  const auto g = lab.probe(
      var.header, {var.threads, var.tile, var.tile, var.fwd_smem + dim, var.dkdv_smem + dim,
                   var.dq_smem + dim,
                   "elementwise_blocks(" + std::to_string(size_t(s.B) * s.T * s.H) + ")",
                   "kElementwiseThreads"});
  const unsigned threads = unsigned(g[0]), br = unsigned(g[1]), bc = unsigned(g[2]);
  const unsigned fwd_smem = unsigned(g[3]), dkdv_smem = unsigned(g[4]), dq_smem = unsigned(g[5]);
  const size_t nq = size_t(s.B) * s.T * s.H * s.D, nk = size_t(s.B) * s.T * s.Hkv * s.D;
  const size_t rows = size_t(s.B) * s.H * s.T;
  auto q = randn(nq, seed, bf, 1.5f), k = randn(nk, seed + 1, bf, 1.5f),
       v = randn(nk, seed + 2, bf);
  auto dout = randn(nq, seed + 3, bf);
  auto dq0 = randn(nq, seed + 4, bf), dk0 = randn(nk, seed + 5, bf), dv0 = randn(nk, seed + 6, bf);

  std::vector<float> out(nq), att(size_t(s.B) * s.H * s.T * s.T);
  cpu.attention_forward(out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv,
                        s.D);
  std::vector<float> dq_ref = dq0, dk_ref = dk0, dv_ref = dv0;
  cpu.attention_backward(dq_ref.data(), dk_ref.data(), dv_ref.data(), dout.data(), att.data(),
                         q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);

  const uint64_t dqd = lab.put(bf, q), dkd = lab.put(bf, k), dvd = lab.put(bf, v);
  const uint64_t od = lab.put(bf, std::vector<float>(nq)),
                 lsed = lab.put(false, std::vector<float>(rows));
  const unsigned qtiles = (unsigned(s.T) + br - 1) / br, ktiles = (unsigned(s.T) + bc - 1) / bc;
  lab.run(fwd, grid3(qtiles, s.H, s.B, threads, fwd_smem),
          Args()
              .ptr(od)
              .ptr(lsed)
              .ptr(dqd)
              .ptr(dkd)
              .ptr(dvd)
              .add<int>(s.B)
              .add<int>(s.T)
              .add<int>(s.H)
              .add<int>(s.Hkv));
  const std::string tag = " B" + std::to_string(s.B) + " T" + std::to_string(s.T) + " H" +
                          std::to_string(s.H) + "/" + std::to_string(s.Hkv) + " D" +
                          std::to_string(s.D);
  auto out_got = lab.get(bf, od, nq);
  expect_nmse("attention_forward out" + tag, out_got, out, TypeParam::kTol);
  expect_nmse("attention_forward lse (fp32)" + tag, lab.get(false, lsed, rows),
              reference_lse(q, k, s), F32::kTol);

  // The backward runs on the kernel's own forward (out, lse), as the backend will.
  const uint64_t gout = lab.put(bf, dout), deltad = lab.put(false, std::vector<float>(rows));
  const uint64_t gq = lab.put(bf, dq0), gk = lab.put(bf, dk0), gv = lab.put(bf, dv0);
  lab.run(
      delta, grid3(unsigned(g[6]), 1, 1, unsigned(g[7])),
      Args().ptr(deltad).ptr(gout).ptr(od).add<int>(s.B).add<int>(s.T).add<int>(s.H).add<int>(s.D));
  lab.run(dkdv, grid3(ktiles, s.Hkv, s.B, threads, dkdv_smem),
          Args()
              .ptr(gk)
              .ptr(gv)
              .ptr(gout)
              .ptr(lsed)
              .ptr(deltad)
              .ptr(dqd)
              .ptr(dkd)
              .ptr(dvd)
              .add<int>(s.B)
              .add<int>(s.T)
              .add<int>(s.H)
              .add<int>(s.Hkv));
  lab.run(dq, grid3(qtiles, s.H, s.B, threads, dq_smem),
          Args()
              .ptr(gq)
              .ptr(gout)
              .ptr(lsed)
              .ptr(deltad)
              .ptr(dqd)
              .ptr(dkd)
              .ptr(dvd)
              .add<int>(s.B)
              .add<int>(s.T)
              .add<int>(s.H)
              .add<int>(s.Hkv));
  // bf16: delta comes from the bf16-rounded out (as FlashAttention's does); the storage
  // bound still holds.
  const double tol = TypeParam::kTol;
  expect_nmse("attention_backward dq (accumulated)" + tag, lab.get(bf, gq, nq), dq_ref, tol);
  expect_nmse("attention_backward dk (accumulated)" + tag, lab.get(bf, gk, nk), dk_ref, tol);
  expect_nmse("attention_backward dv (accumulated)" + tag, lab.get(bf, gv, nk), dv_ref, tol);
}

TYPED_TEST(AttentionKernels, ForwardBackwardTinyModelShape) {
  this->check_forward_backward({2, 37, 4, 2, 8}, 40);
}

TYPED_TEST(AttentionKernels, ForwardBackwardThreeTilesOneKvHead) {
  this->check_forward_backward({1, 70, 3, 1, 16}, 50);
}

TYPED_TEST(AttentionKernels, ForwardBackwardOneTokenAndOneFullTile) {
  this->check_forward_backward({3, 1, 2, 2, 8}, 55);    // T = 1, H == Hkv
  this->check_forward_backward({1, 32, 4, 1, 12}, 57);  // T exactly one tile; D not a power of 2
}

// The register-tiled kernels: two query tiles and a short one, grouped heads, both head dims.
TYPED_TEST(AttentionKernels, WideForwardBackwardHeadDim64) {
  this->check_forward_backward({1, 70, 4, 2, 64}, 60, kWide);
}

TYPED_TEST(AttentionKernels, WideForwardBackwardHeadDim128) {
  this->check_forward_backward({2, 33, 2, 1, 128}, 61, kWide);  // T within one tile, B = 2
  this->check_forward_backward({1, 65, 2, 2, 128}, 62, kWide);  // two tiles, the last one row
}

TYPED_TEST(AttentionKernels, WideForwardBackwardFullTilesAndOneToken) {
  this->check_forward_backward({1, 128, 2, 1, 64}, 63, kWide);  // T two full tiles
  this->check_forward_backward({2, 1, 2, 2, 64}, 64, kWide);    // T = 1
}

// The KV-cache write, then decode over the cache laid out contiguously and paged. Activations
// (q, k, v, out) are stored as bf16 or fp32 (act_bf16), the cache as bf16 or fp32 (cache_bf16):
// the same type, or the sampler's bf16 cache beside fp32 activations. The reference is the CPU
// backend writing and reading a cache of the same dtype; the kernel's cache must hold the very
// bits the CPU's does.
void check_cache_decode(KernelLab& lab, backend::CpuBackend& cpu, bool act_bf16, bool cache_bf16,
                        int D, uint64_t seed, double tol) {
  const std::string act = act_bf16 ? BF16::kName : F32::kName;
  const std::string cache = cache_bf16 ? BF16::kName : F32::kName;
  const std::string targs = "<" + act + (cache_bf16 != act_bf16 ? ", " + cache : "") + ">";
  const std::string write = "kv_cache_write" + targs, decode_k = "attention_decode" + targs;
  const std::string tag = " (D " + std::to_string(D) + ", cache " + (cache_bf16 ? "bf16" : "fp32") + ")";
  lab.build("attention_decode.cuh", {write, decode_k});
  const backend::KvDtype dtype = cache_bf16 ? backend::KvDtype::kBf16 : backend::KvDtype::kF32;
  const int slots = 3, maxT = 45, H = 6, Hkv = 2, KD = Hkv * D;
  const size_t cache_n = size_t(slots) * maxT * KD;
  // The CPU's cache, of `dtype` (a bf16 cache is half as many floats).
  const size_t cpu_floats = cache_bf16 ? cache_n / 2 : cache_n;
  std::vector<float> cpu_k(cpu_floats), cpu_v(cpu_floats);
  // Prefill-like filling of the caches: every (slot, position) row in one launch.
  auto kc = randn(cache_n, seed, act_bf16), vc = randn(cache_n, seed + 1, act_bf16);
  std::vector<int32_t> wslot, wpos;
  for (int sl = 0; sl < slots; ++sl)
    for (int t = 0; t < maxT; ++t) {
      wslot.push_back(sl);
      wpos.push_back(t);
    }
  const uint64_t kcd = lab.put(cache_bf16, std::vector<float>(cache_n)),
                 vcd = lab.put(cache_bf16, std::vector<float>(cache_n));
  auto write_rows = [&](const std::vector<float>& k, const std::vector<float>& v,
                        const std::vector<int32_t>& slot, const std::vector<int32_t>& pos) {
    const int rows = int(slot.size());
    lab.run(write, grid3(unsigned(rows * KD + 255) / 256, 1, 1, 256),
            Args()
                .ptr(kcd)
                .ptr(vcd)
                .ptr(lab.put(act_bf16, k))
                .ptr(lab.put(act_bf16, v))
                .ptr(lab.put_raw(slot))
                .ptr(lab.put_raw(pos))
                .add<int>(rows)
                .add<int>(maxT)
                .add<int>(Hkv)
                .add<int>(D));
    cpu.kv_cache_write(cpu_k.data(), cpu_v.data(), k.data(), v.data(), slot.data(), pos.data(),
                       rows, maxT, Hkv, D, dtype);
  };
  auto same_bits = [&](const char* what) {
    const size_t bytes = cpu_floats * sizeof(float);
    EXPECT_EQ(lab.get_raw<uint8_t>(kcd, bytes),
              std::vector<uint8_t>(reinterpret_cast<uint8_t*>(cpu_k.data()),
                                   reinterpret_cast<uint8_t*>(cpu_k.data()) + bytes))
        << what << tag;
    EXPECT_EQ(lab.get_raw<uint8_t>(vcd, bytes),
              std::vector<uint8_t>(reinterpret_cast<uint8_t*>(cpu_v.data()),
                                   reinterpret_cast<uint8_t*>(cpu_v.data()) + bytes))
        << what << tag;
  };
  write_rows(kc, vc, wslot, wpos);
  same_bits("kv_cache_write, every row");
  // The cache holds the values rounded to its dtype.
  auto stored = [&](std::vector<float> x) {
    if (cache_bf16)
      for (auto& e : x) e = round_bf16(e);
    return x;
  };
  ASSERT_EQ(lab.get(cache_bf16, kcd, cache_n), stored(kc)) << tag;
  // A decode step writes one row at a time: slot 0, position 7.
  auto krow = randn(KD, seed + 2, act_bf16), vrow = randn(KD, seed + 3, act_bf16);
  write_rows(krow, vrow, {0}, {7});
  same_bits("kv_cache_write, one row");
  std::copy(krow.begin(), krow.end(), kc.begin() + 7 * KD);
  std::copy(vrow.begin(), vrow.end(), vc.begin() + 7 * KD);

  // Decode: 4 rows over the 3 slots with ragged lengths (1: a single key; < 4: idle warps).
  const int n = 4;
  std::vector<int32_t> slot = {2, 0, 1, 0}, len = {45, 8, 1, 3};
  auto q = randn(size_t(n) * H * D, seed + 4, act_bf16);
  std::vector<float> out(q.size());
  cpu.attention_decode(out.data(), q.data(), cpu_k.data(), cpu_v.data(), slot.data(), 1,
                       len.data(), n, maxT, H, Hkv, D, dtype);
  const uint64_t qd = lab.put(act_bf16, q), od = lab.put(act_bf16, std::vector<float>(q.size()));
  const uint64_t sd = lab.put_raw(slot), ld = lab.put_raw(len);
  const unsigned decode_threads = unsigned(lab.probe("attention_decode.cuh", {"kDecodeThreads"})[0]);
  auto decode = [&](uint64_t k_pool, uint64_t v_pool, uint64_t table, int max_blocks, int bs) {
    lab.run(decode_k, grid3(n * H, 1, 1, decode_threads),
            Args()
                .ptr(od)
                .ptr(qd)
                .ptr(k_pool)
                .ptr(v_pool)
                .ptr(table)
                .add<int>(max_blocks)
                .ptr(ld)
                .add<int>(n)
                .add<int>(bs)
                .add<int>(H)
                .add<int>(Hkv)
                .add<int>(D));
    return lab.get(act_bf16, od, q.size());
  };
  // The contiguous cache: one block of maxT positions per slot, the slots as the table.
  expect_nmse("attention_decode" + tag, decode(kcd, vcd, sd, 1, maxT), out, tol);
  // The same positions paged: blocks of 9, slot s's block j at physical block (s * 5 + j) * 7
  // mod 15 (scattered, some pairs consecutive).
  const int bs = 9, per_slot = maxT / bs, blocks = slots * per_slot;
  std::vector<int32_t> table;
  std::vector<float> kp(kc.size()), vp(vc.size());
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < per_slot; ++j) table.push_back((slot[r] * per_slot + j) * 7 % blocks);
  for (int sl = 0; sl < slots; ++sl)
    for (int j = 0; j < per_slot; ++j) {
      const size_t from = (size_t(sl) * maxT + size_t(j) * bs) * KD,
                   to = size_t((sl * per_slot + j) * 7 % blocks) * bs * KD;
      std::copy_n(kc.begin() + from, bs * KD, kp.begin() + to);
      std::copy_n(vc.begin() + from, bs * KD, vp.begin() + to);
    }
  const std::vector<float> paged = decode(lab.put(cache_bf16, kp), lab.put(cache_bf16, vp),
                                          lab.put_raw(table), per_slot, bs);
  expect_nmse("attention_decode paged" + tag, paged, out, tol);
}

TYPED_TEST(AttentionKernels, KvCacheWriteThenDecode) {
  const bool bf = TypeParam::kBf16;
  check_cache_decode(this->lab, this->cpu, bf, bf, 40, 60, TypeParam::kTol);  // D > 32: two per lane
}

// The sampler's bf16 cache beside fp32 activations (sampler.kv_cache_dtype = bf16, the CUDA
// backend's default), at the head dims of real models: the cache is rounded once, the arithmetic
// is fp32 on both sides, so only summation order differs (F32's bound).
TEST(AttentionDecodeBf16Cache, MatchesTheCpuBackendsBf16Cache) {
  if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  KernelLab lab;
  backend::CpuBackend cpu{1};
  for (int D : {40, 64, 128}) check_cache_decode(lab, cpu, false, true, D, 70 + D, F32::kTol);
}

}  // namespace
}  // namespace leap::cuda::testing
