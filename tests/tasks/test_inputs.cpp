// Input generation and dtype conversion (tasks/inputs.h, tasks/dtype_convert.h): f16/bf16
// rounding against hand-worked bit patterns, init ranges, sizes from shape expressions under
// both parameter sets, and reproducibility per (seed, trial, buffer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "common/rng.h"
#include "tasks/dtype_convert.h"
#include "tasks/inputs.h"

namespace leap::tasks {
namespace {

TEST(DtypeConvert, F16HandWorked) {
  EXPECT_EQ(f16_bits_from_double(0.0), 0x0000);
  EXPECT_EQ(f16_bits_from_double(-0.0), 0x8000);
  EXPECT_EQ(f16_bits_from_double(1.0), 0x3C00);
  EXPECT_EQ(f16_bits_from_double(-2.0), 0xC000);
  EXPECT_EQ(f16_bits_from_double(0.5), 0x3800);
  EXPECT_EQ(f16_bits_from_double(1.0 / 3.0), 0x3555);  // 0.333251953125
  EXPECT_EQ(f16_bits_from_double(0.1), 0x2E66);        // 0.0999755859375
  EXPECT_EQ(f16_bits_from_double(65504.0), 0x7BFF);    // largest finite
  EXPECT_EQ(f16_bits_from_double(65519.0), 0x7BFF);    // below the halfway point
  EXPECT_EQ(f16_bits_from_double(65520.0), 0x7C00);    // halfway to 2^16: even is infinity
  EXPECT_EQ(f16_bits_from_double(1e9), 0x7C00);
  EXPECT_EQ(f16_bits_from_double(-INFINITY), 0xFC00);
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1.0, -25)), 0x0000);  // tie to even (0)
  EXPECT_EQ(f16_bits_from_double(std::ldexp(3.0, -25)), 0x0002);  // tie to even (2)
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1023.5, -24)),
            0x0400);  // subnormal rounds up to normal
  // Ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even mantissa (1.0) wins.
  EXPECT_EQ(f16_bits_from_double(1.0 + std::ldexp(1.0, -11)), 0x3C00);
  EXPECT_EQ(f16_bits_from_double(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);
  // Just above the tie rounds up: no double rounding through float would get this wrong here.
  EXPECT_EQ(f16_bits_from_double(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3C01);
  EXPECT_TRUE(std::isnan(f16_bits_to_double(f16_bits_from_double(NAN))));
}

TEST(DtypeConvert, Bf16HandWorked) {
  EXPECT_EQ(bf16_bits_from_double(1.0), 0x3F80);
  EXPECT_EQ(bf16_bits_from_double(-2.0), 0xC000);
  EXPECT_EQ(bf16_bits_from_double(0.1), 0x3DCD);                            // 0.10009765625
  EXPECT_EQ(bf16_bits_from_double(1.0 + std::ldexp(1.0, -8)), 0x3F80);      // tie to even
  EXPECT_EQ(bf16_bits_from_double(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);  // tie to even
  EXPECT_EQ(bf16_bits_from_double(3.0e38), 0x7F62);
  EXPECT_EQ(bf16_bits_from_double(3.4e38), 0x7F80);  // rounds past the largest finite
  EXPECT_EQ(bf16_bits_from_double(std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal
}

TEST(DtypeConvert, RoundTripsEveryF16AndBf16) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    double f = f16_bits_to_double(bits);
    if (!std::isnan(f)) {
      ASSERT_EQ(f16_bits_from_double(f), bits) << std::hex << b;
    }
    double g = bf16_bits_to_double(bits);
    if (!std::isnan(g)) {
      ASSERT_EQ(bf16_bits_from_double(g), bits) << std::hex << b;
    }
  }
}

// Property check against the definition of rounding: for random positive doubles across every
// binade (subnormals and overflow included), the chosen value is at least as close as both of
// its neighbours, and a tie goes to the even bit pattern.
void check_nearest_even(uint16_t (*narrow)(double), double (*widen)(uint16_t), int lo_exp,
                        int hi_exp, uint16_t inf_bits) {
  leap::Rng rng(99);
  for (int k = 0; k < 200000; ++k) {
    double x =
        std::ldexp(1.0 + rng.uniform(), lo_exp + static_cast<int>(rng.below(hi_exp - lo_exp)));
    if (k % 7 == 0) {  // exact ties: the midpoint of two adjacent representable values
      uint16_t b = static_cast<uint16_t>(rng.below(inf_bits - 1));
      x = 0.5 * (widen(b) + widen(static_cast<uint16_t>(b + 1)));
    }
    const uint16_t r = narrow(x);
    ASSERT_LE(r, inf_bits) << x;
    if (r == inf_bits) {  // overflow: x is at least the midpoint above the largest finite value
      const double max_finite = widen(static_cast<uint16_t>(inf_bits - 1));
      const double next = 2 * max_finite - widen(static_cast<uint16_t>(inf_bits - 2));
      ASSERT_GE(x, 0.5 * (max_finite + next)) << x;
      continue;
    }
    const double v = widen(r), d = std::fabs(x - v);
    if (r > 0) {
      const double below = std::fabs(x - widen(static_cast<uint16_t>(r - 1)));
      ASSERT_LE(d, below) << x;
      if (d == below) {
        ASSERT_EQ(r & 1, 0) << x;
      }
    }
    if (r + 1 < inf_bits) {
      const double above = std::fabs(x - widen(static_cast<uint16_t>(r + 1)));
      ASSERT_LE(d, above) << x;
      if (d == above) {
        ASSERT_EQ(r & 1, 0) << x;
      }
    }
  }
}

TEST(DtypeConvert, RoundsToNearestEvenEverywhere) {
  check_nearest_even(f16_bits_from_double, f16_bits_to_double, -27, 17, 0x7C00);
  check_nearest_even(bf16_bits_from_double, bf16_bits_to_double, -136, 129, 0x7F80);
}

TEST(DtypeConvert, IntegersSaturate) {
  uint8_t buf[8];
  write_element(buf, DType::kU8, 0, 300.0);
  EXPECT_EQ(read_element(buf, DType::kU8, 0), 255.0);
  write_element(buf, DType::kI32, 0, -2.6);
  EXPECT_EQ(read_element(buf, DType::kI32, 0), -3.0);
  write_element(buf, DType::kI64, 0, 1e30);
  int64_t v;
  std::memcpy(&v, buf, 8);
  EXPECT_EQ(v, std::numeric_limits<int64_t>::max());
}

Task make_task() {
  Task t;
  t.id = "T/inputs";
  t.params = {{"n", int64_t{1000}}, {"m", int64_t{7}}};
  t.cpu_params = {{"n", int64_t{13}}, {"m", int64_t{3}}};
  auto buf = [](const char* name, DType dt, std::vector<std::string> shape, Role role, Init init) {
    BufferSpec b;
    b.name = name;
    b.dtype = dt;
    b.shape = std::move(shape);
    b.role = role;
    b.init = init;
    return b;
  };
  t.buffers = {
      buf("x", DType::kF32, {"n"}, Role::kIn, {Init::Kind::kNormal}),
      buf("u", DType::kF16, {"m", "n"}, Role::kIn, {Init::Kind::kUniform, -2, 3}),
      buf("r", DType::kI32, {"n"}, Role::kIn, {Init::Kind::kRandint, -1, 1}),
      buf("bb", DType::kBF16, {"n"}, Role::kInOut, {Init::Kind::kOnes}),
      buf("z", DType::kU8, {"n"}, Role::kIn, {Init::Kind::kZeros}),
      buf("y", DType::kF32, {"cdiv(n, 2)"}, Role::kOut, {}),
  };
  return t;
}

TEST(Inputs, SizesFollowShapesUnderEachParameterSet) {
  Task t = make_task();
  auto gpu = generate_inputs(t, params_for(t, SizeSet::kGpu), 1, 0);
  ASSERT_TRUE(gpu) << gpu.status().message();
  auto cpu = generate_inputs(t, params_for(t, SizeSet::kCpu), 1, 0);
  ASSERT_TRUE(cpu) << cpu.status().message();
  ASSERT_EQ(gpu->size(), 6u);
  EXPECT_EQ((*gpu)[1].elements, 7000);
  EXPECT_EQ((*gpu)[1].bytes.size(), 14000u);
  EXPECT_EQ((*gpu)[5].elements, 500);
  EXPECT_EQ((*cpu)[1].elements, 39);
  EXPECT_EQ((*cpu)[5].elements, 7);
  EXPECT_EQ((*cpu)[5].bytes.size(), 28u);
  EXPECT_EQ((*cpu)[3].role, Role::kInOut);
}

TEST(Inputs, InitRangesAndDtypes) {
  Task t = make_task();
  auto in = generate_inputs(t, t.params, 7, 2);
  ASSERT_TRUE(in);
  const auto& x = (*in)[0];
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < x.elements; ++i) {
    double v = read_element(x.bytes.data(), x.dtype, i);
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / 1000, 0.0, 0.15);  // mean of 1000 standard normals: sd 0.03
  EXPECT_NEAR(sq / 1000, 1.0, 0.2);
  const auto& u = (*in)[1];
  for (int64_t i = 0; i < u.elements; ++i) {
    double v = read_element(u.bytes.data(), u.dtype, i);
    ASSERT_GE(v, -2.0);
    ASSERT_LE(v, 3.0);  // an f16 rounding of a draw just under 3 may reach 3 itself
  }
  const auto& r = (*in)[2];
  std::set<double> seen;
  for (int64_t i = 0; i < r.elements; ++i) seen.insert(read_element(r.bytes.data(), r.dtype, i));
  EXPECT_EQ(seen, (std::set<double>{-1, 0, 1}));  // randint is inclusive of both bounds
  const auto& bb = (*in)[3];
  for (int64_t i = 0; i < bb.elements; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bb.bytes.data() + 2 * i, 2);
    ASSERT_EQ(bits, 0x3F80);  // bf16 1.0
  }
  for (uint8_t byte : (*in)[4].bytes) ASSERT_EQ(byte, 0);
  for (uint8_t byte : (*in)[5].bytes) ASSERT_EQ(byte, 0);  // out: zeroed until poisoned
}

TEST(Inputs, ReproduciblePerSeedTrialAndBuffer) {
  Task t = make_task();
  auto a = generate_inputs(t, t.params, 11, 0);
  auto b = generate_inputs(t, t.params, 11, 0);
  auto c = generate_inputs(t, t.params, 11, 1);
  auto d = generate_inputs(t, t.params, 12, 0);
  ASSERT_TRUE(a && b && c && d);
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].bytes, (*b)[i].bytes) << i;
  EXPECT_NE((*a)[0].bytes, (*c)[0].bytes);  // a new trial draws fresh inputs
  EXPECT_NE((*a)[0].bytes, (*d)[0].bytes);  // so does a new seed
  // A buffer's stream depends on its name, not its position: reordering keeps its values.
  Task swapped = t;
  std::swap(swapped.buffers[0], swapped.buffers[1]);
  auto e = generate_inputs(swapped, swapped.params, 11, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)[1].bytes, (*a)[0].bytes);
  EXPECT_NE(input_stream_id(0, "x"), input_stream_id(1, "x"));
  EXPECT_NE(input_stream_id(0, "x"), input_stream_id(0, "y"));
}

// A buffer longer than one chunk: the same values whatever the thread count; its first chunk is
// the buffer's own stream as drawn before chunks (so every interpreter-sized buffer, all under one
// chunk, keeps its values), and each later chunk starts a stream of its own.
TEST(Inputs, ChunksAreTheSameOnAnyNumberOfThreads) {
  Task t = make_task();
  const int64_t n = 3 * static_cast<int64_t>(kInputChunk) + 17;
  t.params["n"] = n;
  auto one = generate_inputs(t, t.params, 5, 1, 1);
  ASSERT_TRUE(one);
  for (int threads : {2, 3, 8}) {
    auto many = generate_inputs(t, t.params, 5, 1, threads);
    ASSERT_TRUE(many);
    for (size_t i = 0; i < one->size(); ++i) EXPECT_EQ((*many)[i].bytes, (*one)[i].bytes) << threads << " threads, buffer " << i;
  }
  const BufferData& x = (*one)[0];  // f32, normal
  Rng rng(5, input_stream_id(1, "x"));
  for (size_t i = 0; i < kInputChunk; ++i)
    ASSERT_EQ(read_element(x.bytes.data(), x.dtype, i), static_cast<double>(static_cast<float>(rng.normal()))) << i;
  // The next draw of that stream is not chunk 1's first value: chunk 1 has its own stream.
  EXPECT_NE(read_element(x.bytes.data(), x.dtype, kInputChunk), static_cast<double>(static_cast<float>(rng.normal())));
  Rng chunk1(5, input_chunk_stream(input_stream_id(1, "x"), 1));
  EXPECT_EQ(read_element(x.bytes.data(), x.dtype, kInputChunk), static_cast<double>(static_cast<float>(chunk1.normal())));
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = read_element(x.bytes.data(), x.dtype, i);
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / static_cast<double>(n), 0.0, 0.01);  // sd of the mean: 0.002
  EXPECT_NEAR(sq / static_cast<double>(n), 1.0, 0.02);
}

TEST(Inputs, PoisonAndBadShapes) {
  Task t = make_task();
  auto in = generate_inputs(t, t.cpu_params, 1, 0);
  ASSERT_TRUE(in);
  fill_poison((*in)[5]);
  for (int64_t i = 0; i < (*in)[5].elements; ++i)
    EXPECT_TRUE(std::isnan(read_element((*in)[5].bytes.data(), DType::kF32, i)));
  fill_poison((*in)[2]);
  for (uint8_t byte : (*in)[2].bytes) EXPECT_EQ(byte, 0x7E);
  t.buffers[5].shape = {"n - 2000"};
  auto bad = generate_inputs(t, t.params, 1, 0);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("must be positive"), std::string::npos);
}

}  // namespace
}  // namespace leap::tasks
