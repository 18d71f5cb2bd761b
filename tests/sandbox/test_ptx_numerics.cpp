// Numeric corners of the PTX interpreter, each checked against an independent C++ reference:
// half and bfloat16 conversions and arithmetic, the CUDA math library (which NVRTC lowers to
// ex2/lg2/rcp/sqrt/fma sequences with directed rounding), integer and bit instructions, and the
// warp collectives (shfl in every mode and width, vote, ballot, activemask, match, redux).
#include <bit>
#include <cmath>

#include "common/rng.h"
#include "ptx_test_util.h"

namespace leap::sandbox::ptx {
namespace {

using testing::Args;
using testing::compile;
using testing::dims;
using testing::download;
using testing::upload;

class PtxNumerics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  NvrtcCompiler compiler_;
  GlobalMemory mem_;
};

// bf16 by round-to-nearest-even on the f32 bits (the textbook formula, independent of ours).
uint16_t ref_bf16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return 0x7fff;
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}
float bf16_value(uint16_t h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

TEST_F(PtxNumerics, HalfAndBfloat16ConversionsAndArithmetic) {
  auto c = compile(compiler_, R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void hb(const float* x, __half* h, __nv_bfloat16* b, float* h_back, float* hsum,
                   float* bsum, __half2* h2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half hv = __float2half(x[i]);
  __nv_bfloat16 bv = __float2bfloat16(x[i]);
  h[i] = hv; b[i] = bv;
  h_back[i] = __half2float(hv);
  hsum[i] = __half2float(__hadd(hv, __hmul(hv, hv)));
  bsum[i] = __bfloat162float(__hadd(bv, bv));
  __half2 p = __floats2half2_rn(x[i], -x[i]);
  h2[i] = __hfma2(p, p, p);
}
)",
                   {"hb"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 517;
  Rng rng(21);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(rng.normal() * 10);
  x[0] = 65504.f;  // the largest half
  x[1] = 70000.f;  // overflows half to inf
  x[2] = 1e-6f;    // a half subnormal
  x[3] = -0.f;
  uint64_t dx = upload(mem_, x);
  uint64_t dh = upload(mem_, std::vector<uint16_t>(n)), db = upload(mem_, std::vector<uint16_t>(n));
  uint64_t dback = upload(mem_, std::vector<float>(n)), dhs = upload(mem_, std::vector<float>(n)),
           dbs = upload(mem_, std::vector<float>(n)), dh2 = upload(mem_, std::vector<uint32_t>(n));
  auto r = launch(
      *c.module, c.name("hb"), dims(5, 128),
      Args().ptr(dx).ptr(dh).ptr(db).ptr(dback).ptr(dhs).ptr(dbs).ptr(dh2).add<int>(n).list(),
      mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto h = download<uint16_t>(mem_, dh, n);
  auto b = download<uint16_t>(mem_, db, n);
  auto back = download<float>(mem_, dback, n);
  auto hs = download<float>(mem_, dhs, n);
  auto bs = download<float>(mem_, dbs, n);
  auto h2 = download<uint32_t>(mem_, dh2, n);
  for (int i = 0; i < n; ++i) {
    const _Float16 ref = static_cast<_Float16>(x[i]);  // the compiler's IEEE conversion
    ASSERT_EQ(h[i], std::bit_cast<uint16_t>(ref)) << i << " x=" << x[i];
    ASSERT_EQ(back[i], static_cast<float>(ref)) << i;
    const _Float16 sum = static_cast<_Float16>(
        static_cast<float>(ref) + static_cast<float>(static_cast<_Float16>(
                                      static_cast<float>(ref) * static_cast<float>(ref))));
    if (!std::isnan(static_cast<float>(sum))) {
      ASSERT_EQ(hs[i], static_cast<float>(sum)) << i;
    }
    ASSERT_EQ(b[i], ref_bf16(x[i])) << i;
    ASSERT_EQ(bs[i], bf16_value(ref_bf16(bf16_value(ref_bf16(x[i])) * 2))) << i;
    const _Float16 lo = static_cast<_Float16>(x[i]), hi = static_cast<_Float16>(-x[i]);
    const _Float16 flo = static_cast<_Float16>(
        std::fma(static_cast<double>(lo), static_cast<double>(lo), static_cast<double>(lo)));
    const _Float16 fhi = static_cast<_Float16>(
        std::fma(static_cast<double>(hi), static_cast<double>(hi), static_cast<double>(hi)));
    // NaN results are the canonical 0x7fff, as on the GPU.
    auto expect_half = [](uint32_t got, _Float16 want) {
      return std::isnan(static_cast<float>(want)) ? got == 0x7fff
                                                  : got == std::bit_cast<uint16_t>(want);
    };
    ASSERT_TRUE(expect_half(h2[i] & 0xffff, flo)) << i;
    ASSERT_TRUE(expect_half(h2[i] >> 16, fhi)) << i;
  }
}

TEST_F(PtxNumerics, MathLibraryMatchesLibm) {
  auto c = compile(compiler_, R"(
__global__ void math(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float* o = out + 12 * i;
  o[0] = expf(v); o[1] = logf(fabsf(v) + 1e-3f); o[2] = sinf(v); o[3] = cosf(v);
  o[4] = tanhf(v); o[5] = sqrtf(fabsf(v)); o[6] = rsqrtf(fabsf(v) + 1.f); o[7] = erff(v);
  o[8] = powf(fabsf(v), 1.7f); o[9] = 1.f / (1.f + __expf(-v)); o[10] = v / (v * v + 1.f);
  o[11] = (float)(sqrt((double)fabsf(v)) / (1.0 + (double)v * v));
}
)",
                   {"math"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 300;
  Rng rng(22);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(rng.uniform(-8, 8));
  uint64_t dx = upload(mem_, x), dout = upload(mem_, std::vector<float>(12 * n));
  auto r = launch(*c.module, c.name("math"), dims(3, 128),
                  Args().ptr(dx).ptr(dout).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<float>(mem_, dout, 12 * n);
  for (int i = 0; i < n; ++i) {
    const double v = x[i];
    const double ref[12] = {std::exp(v),
                            std::log(std::fabs(v) + 1e-3),
                            std::sin(v),
                            std::cos(v),
                            std::tanh(v),
                            std::sqrt(std::fabs(v)),
                            1 / std::sqrt(std::fabs(v) + 1),
                            std::erf(v),
                            std::pow(std::fabs(v), 1.7),
                            1 / (1 + std::exp(-v)),
                            v / (v * v + 1),
                            std::sqrt(std::fabs(v)) / (1 + v * v)};
    for (int k = 0; k < 12; ++k) {
      ASSERT_NEAR(out[12 * i + k], ref[k], 4e-6 * std::max(1.0, std::fabs(ref[k])))
          << "function " << k << " at x=" << v;
    }
  }
}

TEST_F(PtxNumerics, IntegerAndBitInstructions) {
  auto c = compile(compiler_, R"(
__global__ void bits(const int* a, const int* b, int* out, long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  int* o = out + 14 * i;
  o[0] = x / (y == 0 ? 1 : y); o[1] = x % (y == 0 ? 1 : y);
  o[2] = (int)(ux / (uy | 1u)); o[3] = __popc(ux); o[4] = __clz(x); o[5] = (int)__brev(ux);
  o[6] = (int)__byte_perm(ux, uy, 0x5140); o[7] = (int)__umulhi(ux, uy); o[8] = __mulhi(x, y);
  o[9] = x >> (y & 31); o[10] = (int)(ux >> (uy & 31)); o[11] = x << (y & 15);
  o[12] = min(x, y) ^ max(x, y); o[13] = abs(x) + __ffs(x);
  wide[2 * i] = (long long)x * y;
  wide[2 * i + 1] = ((long long)x << 20) / ((long long)(y | 1)) + __popcll((unsigned long long)wide[2 * i]);
}
)",
                   {"bits"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 200;
  Rng rng(23);
  std::vector<int> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int>(rng.next_u64());
    b[i] = static_cast<int>(rng.next_u64() >> (i % 31));
  }
  a[0] = INT32_MIN;
  b[0] = -1;
  b[1] = 0;
  uint64_t da = upload(mem_, a), db = upload(mem_, b),
           dout = upload(mem_, std::vector<int>(14 * n)),
           dw = upload(mem_, std::vector<int64_t>(2 * n));
  auto r = launch(*c.module, c.name("bits"), dims(2, 128),
                  Args().ptr(da).ptr(db).ptr(dout).ptr(dw).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<int>(mem_, dout, 14 * n);
  auto wide = download<int64_t>(mem_, dw, 2 * n);
  for (int i = 0; i < n; ++i) {
    const int x = a[i], y = b[i];
    const uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
    const int yy = y == 0 ? 1 : y;
    uint32_t brev = 0;
    for (int k = 0; k < 32; ++k) brev |= ((ux >> k) & 1u) << (31 - k);
    const uint64_t bytes = (uint64_t{uy} << 32) | ux;
    uint32_t perm = 0;
    const uint32_t sel[4] = {0, 4, 1, 5};
    for (int k = 0; k < 4; ++k)
      perm |= static_cast<uint32_t>((bytes >> (8 * sel[k])) & 0xff) << (8 * k);
    const int ref[14] = {
        (x == INT32_MIN && yy == -1) ? x : x / yy,
        (yy == -1) ? 0 : x % yy,
        static_cast<int>(ux / (uy | 1u)),
        std::popcount(ux),
        std::countl_zero(ux),
        static_cast<int>(brev),
        static_cast<int>(perm),
        static_cast<int>((uint64_t{ux} * uy) >> 32),
        static_cast<int>((int64_t{x} * y) >> 32),
        x >> (y & 31),
        static_cast<int>(ux >> (uy & 31)),
        static_cast<int>(ux << (y & 15)),
        std::min(x, y) ^ std::max(x, y),
        static_cast<int>(static_cast<uint32_t>(x == INT32_MIN ? x : std::abs(x)) +
                         (x ? std::countr_zero(ux) + 1 : 0)),
    };
    for (int k = 0; k < 14; ++k)
      ASSERT_EQ(out[14 * i + k], ref[k]) << "op " << k << " x=" << x << " y=" << y;
    const int64_t w = int64_t{x} * y;
    ASSERT_EQ(wide[2 * i], w);
    ASSERT_EQ(wide[2 * i + 1],
              (static_cast<int64_t>(static_cast<uint64_t>(int64_t{x}) << 20)) / (int64_t{y | 1}) +
                  std::popcount(static_cast<uint64_t>(w)));
  }
}

TEST_F(PtxNumerics, WarpCollectivesSeeTheRightLanes) {
  auto c = compile(compiler_, R"(
__global__ void warp(const int* in, int* out) {
  int t = threadIdx.x, lane = t % 32;
  int v = in[t];
  int* o = out + 10 * t;
  o[0] = __shfl_sync(0xffffffff, v, (lane * 7) % 32);
  o[1] = __shfl_up_sync(0xffffffff, v, 3);
  o[2] = __shfl_down_sync(0xffffffff, v, 5);
  o[3] = __shfl_xor_sync(0xffffffff, v, 9);
  o[4] = __shfl_down_sync(0xffffffff, v, 2, 8);     // width 8
  o[5] = (int)__ballot_sync(0xffffffff, v & 1);
  o[6] = __all_sync(0xffffffff, v > -1000) + 2 * __any_sync(0xffffffff, v == in[0]);
  o[7] = 0;
  if (lane < 20) o[7] = (int)__activemask();
  o[8] = (int)__match_any_sync(0xffffffff, v & 3);
  o[9] = __reduce_add_sync(0xffffffff, v) ^ __reduce_max_sync(0xffffffff, v);
}
)",
                   {"warp"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int nt = 64;
  Rng rng(24);
  std::vector<int> in(nt);
  for (auto& v : in) v = static_cast<int>(rng.below(1000)) - 500;
  uint64_t din = upload(mem_, in), dout = upload(mem_, std::vector<int>(10 * nt));
  auto r = launch(*c.module, c.name("warp"), dims(1, nt), Args().ptr(din).ptr(dout).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<int>(mem_, dout, 10 * nt);
  for (int w = 0; w < 2; ++w) {
    const int* v = in.data() + 32 * w;
    uint32_t ballot = 0;
    bool all = true, any = false;
    int sum = 0, mx = -100000;
    for (int l = 0; l < 32; ++l) {
      ballot |= static_cast<uint32_t>(v[l] & 1) << l;
      all &= v[l] > -1000;
      any |= v[l] == in[0];
      sum += v[l];
      mx = std::max(mx, v[l]);
    }
    for (int l = 0; l < 32; ++l) {
      const int* o = out.data() + 10 * (32 * w + l);
      ASSERT_EQ(o[0], v[(l * 7) % 32]) << l;
      ASSERT_EQ(o[1], l >= 3 ? v[l - 3] : v[l]) << l;
      ASSERT_EQ(o[2], l + 5 < 32 ? v[l + 5] : v[l]) << l;
      ASSERT_EQ(o[3], v[l ^ 9]) << l;
      ASSERT_EQ(o[4], (l % 8) + 2 < 8 ? v[l + 2] : v[l]) << l;
      ASSERT_EQ(static_cast<uint32_t>(o[5]), ballot) << l;
      ASSERT_EQ(o[6], int(all) + 2 * int(any)) << l;
      ASSERT_EQ(static_cast<uint32_t>(o[7]), l < 20 ? 0xfffffu : 0u) << l;
      uint32_t match = 0;
      for (int k = 0; k < 32; ++k) match |= static_cast<uint32_t>((v[k] & 3) == (v[l] & 3)) << k;
      ASSERT_EQ(static_cast<uint32_t>(o[8]), match) << l;
      ASSERT_EQ(o[9], sum ^ mx) << l;
    }
  }
}

TEST_F(PtxNumerics, ThreeDimensionalBlocksAndGrids) {
  auto c = compile(compiler_, R"(
__global__ void ids(int* out) {
  int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int nthreads = blockDim.x * blockDim.y * blockDim.z;
  out[bx * nthreads + tx] = (threadIdx.z << 16) | (threadIdx.y << 8) | threadIdx.x | (blockIdx.y << 24);
}
)",
                   {"ids"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  LaunchDims d;
  d.grid[0] = 2;
  d.grid[1] = 3;
  d.grid[2] = 2;
  d.block[0] = 5;
  d.block[1] = 3;
  d.block[2] = 2;
  const int total = 2 * 3 * 2 * 5 * 3 * 2;
  uint64_t dout = upload(mem_, std::vector<int>(total, -1));
  auto r = launch(*c.module, c.name("ids"), d, Args().ptr(dout).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<int>(mem_, dout, total);
  int idx = 0;
  for (int bz = 0; bz < 2; ++bz)
    for (int by = 0; by < 3; ++by)
      for (int bx = 0; bx < 2; ++bx)
        for (int tz = 0; tz < 2; ++tz)
          for (int ty = 0; ty < 3; ++ty)
            for (int tx = 0; tx < 5; ++tx)
              ASSERT_EQ(out[idx++], (tz << 16) | (ty << 8) | tx | (by << 24));
}

TEST_F(PtxNumerics, MediaAndAddressSpaceIntrinsics) {
  auto c = compile(compiler_, R"(
__global__ void media(const int* a, const int* b, int* out, int n) {
  __shared__ int s[1];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int* o = out + 8 * i;
  o[0] = __mul24(x, y); o[1] = (int)__umul24((unsigned)x, (unsigned)y); o[2] = __mulhi(x, y);
  o[3] = (int)__sad(x, y, 7u); o[4] = __dp4a(x, y, 5); o[5] = (int)__dp2a_lo((unsigned)x, (unsigned)y, 9u);
  o[6] = __isShared(s) * 2 + __isGlobal(out);
  int sat;
  asm("add.sat.s32 %0, %1, %2;" : "=r"(sat) : "r"(x), "r"(y));
  o[7] = sat;
}
)",
                   {"media"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 100;
  Rng rng(25);
  std::vector<int> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int>(rng.next_u64());
    b[i] = static_cast<int>(rng.next_u64());
  }
  uint64_t da = upload(mem_, a), db = upload(mem_, b), dout = upload(mem_, std::vector<int>(8 * n));
  auto r = launch(*c.module, c.name("media"), dims(1, 128),
                  Args().ptr(da).ptr(db).ptr(dout).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<int>(mem_, dout, 8 * n);
  auto s24 = [](int v) {
    return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v) << 8) >> 8);
  };
  for (int i = 0; i < n; ++i) {
    const int x = a[i], y = b[i];
    const uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
    int64_t dp4 = 5, dp2 = 9;
    for (int k = 0; k < 4; ++k)
      dp4 += int64_t{static_cast<int8_t>(ux >> (8 * k))} * static_cast<int8_t>(uy >> (8 * k));
    for (int k = 0; k < 2; ++k)
      dp2 += int64_t{static_cast<uint16_t>(ux >> (16 * k))} * static_cast<uint8_t>(uy >> (8 * k));
    const int ref[8] = {
        static_cast<int>(static_cast<uint32_t>(s24(x) * s24(y))),
        static_cast<int>(static_cast<uint32_t>(uint64_t{ux & 0xffffff} * (uy & 0xffffff))),
        static_cast<int>((int64_t{x} * y) >> 32),
        static_cast<int>(static_cast<uint32_t>(x > y ? int64_t{x} - y : int64_t{y} - x) + 7u),
        static_cast<int>(static_cast<uint32_t>(dp4)),
        static_cast<int>(static_cast<uint32_t>(dp2)),
        2 * 1 + 1,
        static_cast<int>(std::clamp<int64_t>(int64_t{x} + y, INT32_MIN, INT32_MAX)),
    };
    for (int k = 0; k < 8; ++k)
      ASSERT_EQ(out[8 * i + k], ref[k]) << "op " << k << " x=" << x << " y=" << y;
  }
}

TEST_F(PtxNumerics, PrmtModesFollowThePtxTables) {
  auto c = compile(compiler_, R"(
__global__ void modes(unsigned a, unsigned b, unsigned* out) {
  unsigned s = threadIdx.x, d[6];
  asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(d[0]) : "r"(a), "r"(b), "r"(s));
  asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(d[1]) : "r"(a), "r"(b), "r"(s));
  asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(d[2]) : "r"(a), "r"(b), "r"(s));
  asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(d[3]) : "r"(a), "r"(b), "r"(s));
  asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(d[4]) : "r"(a), "r"(b), "r"(s));
  asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(d[5]) : "r"(a), "r"(b), "r"(s));
  for (int k = 0; k < 6; ++k) out[6 * threadIdx.x + k] = d[k];
}
)",
                   {"modes"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dout = upload(mem_, std::vector<uint32_t>(24));
  auto r =
      launch(*c.module, c.name("modes"), dims(1, 4),
             Args().add<uint32_t>(0x33221100u).add<uint32_t>(0x77665544u).ptr(dout).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<uint32_t>(mem_, dout, 24);
  // Byte k of {b, a} is 0xkk * 0x11; the PTX ISA's tables, written out (d.b3 d.b2 d.b1 d.b0).
  const uint32_t want[4][6] = {
      {0x33221100, 0x55667700, 0x00000000, 0x33221100, 0x00000000, 0x11001100},
      {0x44332211, 0x66770011, 0x11111111, 0x33221111, 0x11111100, 0x33223322},
      {0x55443322, 0x77001122, 0x22222222, 0x33222222, 0x22221100, 0x11001100},
      {0x66554433, 0x00112233, 0x33333333, 0x33333333, 0x33221100, 0x33223322}};
  for (int s = 0; s < 4; ++s) {
    for (int k = 0; k < 6; ++k)
      EXPECT_EQ(out[6 * s + k], want[s][k]) << "selector " << s << " mode " << k;
  }
}

// Directed rounding of an exactly known value v to float: round to nearest, then step once
// toward the wanted direction when the nearest lies on the wrong side (independent of ours).
float round_to_float(double v, int mode) {  // 0 rz, 1 rd, 2 ru
  float r = static_cast<float>(v);
  if (std::isinf(r) || static_cast<double>(r) == v) return r;
  const bool above = static_cast<double>(r) > v;
  if (mode == 0 && (above == (v > 0))) r = std::nextafter(r, 0.0f);
  if (mode == 1 && above) r = std::nextafter(r, -INFINITY);
  if (mode == 2 && !above) r = std::nextafter(r, INFINITY);
  return r;
}
uint16_t round_to_half(float v, int mode) {
  _Float16 h = static_cast<_Float16>(v);
  const float back = static_cast<float>(h);
  if (std::isnan(v) || back == v) return std::bit_cast<uint16_t>(h);
  const bool above = back > v;
  auto step = [&](bool up) {
    uint16_t b = std::bit_cast<uint16_t>(h);
    const bool neg = b & 0x8000;
    if (std::isinf(back)) {  // overflowed: the largest finite half in the direction of v
      return static_cast<uint16_t>(neg ? 0xfbff : 0x7bff);
    }
    if ((b & 0x7fff) == 0) return static_cast<uint16_t>(up ? 0x0001 : 0x8001);
    return static_cast<uint16_t>((up != neg) ? b + 1 : b - 1);
  };
  if (mode == 0 && (above == (v > 0))) return step(v < 0);
  if (mode == 1 && above) return step(false);
  if (mode == 2 && !above) return step(true);
  return std::bit_cast<uint16_t>(h);
}

TEST_F(PtxNumerics, DirectedRoundingModes) {
  auto c = compile(compiler_, R"(
#include <cuda_fp16.h>
__global__ void rounding(const float* x, const float* y, const double* z, float* f, unsigned short* h, int* k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  f[6 * i + 0] = __fmul_rz(a, b); f[6 * i + 1] = __fmul_rd(a, b); f[6 * i + 2] = __fmul_ru(a, b);
  f[6 * i + 3] = __double2float_rz(z[i]); f[6 * i + 4] = __double2float_rd(z[i]); f[6 * i + 5] = __double2float_ru(z[i]);
  h[3 * i + 0] = __half_as_ushort(__float2half_rz(a));
  h[3 * i + 1] = __half_as_ushort(__float2half_rd(a));
  h[3 * i + 2] = __half_as_ushort(__float2half_ru(a));
  k[4 * i + 0] = __float2int_rn(a); k[4 * i + 1] = __float2int_rz(a);
  k[4 * i + 2] = __float2int_rd(a); k[4 * i + 3] = __float2int_ru(a);
}
)",
                   {"rounding"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 400;
  Rng rng(26);
  std::vector<float> x(n), y(n);
  std::vector<double> z(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(rng.normal() * std::pow(10.0, rng.uniform(-6, 5)));
    y[i] = static_cast<float>(rng.normal() * 3);
    z[i] = rng.normal() * 1e3;
  }
  x[0] = 65519.f;  // rounds to inf in RN and RU, to 65504 in RZ/RD
  x[1] = -2.5f;    // ties for the integer conversions
  x[2] = 3.5f;
  uint64_t dx = upload(mem_, x), dy = upload(mem_, y), dz = upload(mem_, z);
  uint64_t df = upload(mem_, std::vector<float>(6 * n)),
           dh = upload(mem_, std::vector<uint16_t>(3 * n)),
           dk = upload(mem_, std::vector<int>(4 * n));
  auto r = launch(*c.module, c.name("rounding"), dims(4, 128),
                  Args().ptr(dx).ptr(dy).ptr(dz).ptr(df).ptr(dh).ptr(dk).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto f = download<float>(mem_, df, 6 * n);
  auto h = download<uint16_t>(mem_, dh, 3 * n);
  auto k = download<int>(mem_, dk, 4 * n);
  for (int i = 0; i < n; ++i) {
    const double prod = static_cast<double>(x[i]) * y[i];  // exact
    for (int m = 0; m < 3; ++m) {
      ASSERT_EQ(f[6 * i + m], round_to_float(prod, m)) << "mul mode " << m << " i=" << i;
      ASSERT_EQ(f[6 * i + 3 + m], round_to_float(z[i], m)) << "d2f mode " << m << " i=" << i;
      ASSERT_EQ(h[3 * i + m], round_to_half(x[i], m)) << "f2h mode " << m << " x=" << x[i];
    }
    ASSERT_EQ(k[4 * i + 0], static_cast<int>(std::nearbyint(x[i]))) << x[i];
    ASSERT_EQ(k[4 * i + 1], static_cast<int>(std::trunc(x[i]))) << x[i];
    ASSERT_EQ(k[4 * i + 2], static_cast<int>(std::floor(x[i]))) << x[i];
    ASSERT_EQ(k[4 * i + 3], static_cast<int>(std::ceil(x[i]))) << x[i];
  }
}

}  // namespace
}  // namespace leap::sandbox::ptx
