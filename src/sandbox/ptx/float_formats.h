// Floating-point formats and rounding for the interpreter: f16 and bf16 encode/decode, rounding a
// double to f32/f16/bf16 under each PTX rounding mode (rn, rz, rm, rp), and flush-to-zero.
//
// Invariants: encode_float is exact rounding of its double input (the input is exact for every
// conversion and single f16/bf16 operation we feed it); NaN results are the canonical quiet NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace leap::sandbox::ptx {

enum class Round : uint8_t { kRn, kRz, kRm, kRp };

// Rounds `v` to the binary format with `E` exponent bits and `M` stored mantissa bits.
inline uint64_t encode_float(double v, int E, int M, Round mode) {
  const uint64_t sign = std::signbit(v) ? 1 : 0;
  const uint64_t sign_bit = sign << (E + M);
  const uint64_t exp_all = (uint64_t{1} << E) - 1;
  if (std::isnan(v)) return (exp_all << M) | ((uint64_t{1} << M) - 1);  // canonical NaN
  double a = std::fabs(v);
  if (std::isinf(a)) return sign_bit | (exp_all << M);
  if (a == 0) return sign_bit;
  const int bias = (1 << (E - 1)) - 1;
  int e2 = 0;
  std::frexp(a, &e2);
  int exp = e2 - 1;
  if (exp < 1 - bias) exp = 1 - bias;  // subnormal: fixed quantum
  const double scaled = std::ldexp(a, M - exp);
  const double ip = std::floor(scaled);
  const double frac = scaled - ip;
  uint64_t mant = static_cast<uint64_t>(ip);
  bool up = false;
  switch (mode) {
    case Round::kRn:
      up = frac > 0.5 || (frac == 0.5 && (mant & 1));
      break;
    case Round::kRz:
      up = false;
      break;
    case Round::kRm:
      up = sign && frac > 0;
      break;
    case Round::kRp:
      up = !sign && frac > 0;
      break;
  }
  mant += up;
  if (mant >= (uint64_t{2} << M)) {
    mant >>= 1;
    ++exp;
  }
  if (exp > bias) {  // overflow
    const bool to_inf =
        mode == Round::kRn || (mode == Round::kRp && !sign) || (mode == Round::kRm && sign);
    if (to_inf) return sign_bit | (exp_all << M);
    return sign_bit | ((exp_all - 1) << M) | ((uint64_t{1} << M) - 1);
  }
  if (mant < (uint64_t{1} << M)) return sign_bit | mant;  // subnormal
  return sign_bit | (static_cast<uint64_t>(exp + bias) << M) | (mant - (uint64_t{1} << M));
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}
inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t{b} << 16);
}

inline uint16_t double_to_half(double v, Round m = Round::kRn) {
  return static_cast<uint16_t>(encode_float(v, 5, 10, m));
}
inline uint16_t double_to_bf16(double v, Round m = Round::kRn) {
  return static_cast<uint16_t>(encode_float(v, 8, 7, m));
}
inline float double_to_float(double v, Round m) {
  if (m == Round::kRn) return static_cast<float>(v);
  return std::bit_cast<float>(static_cast<uint32_t>(encode_float(v, 8, 23, m)));
}

inline float flush_f32(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}

// a*b+c with one rounding of the exact result to f32 under `m`. The product of two floats is
// exact in double; the sum is rounded to odd in double, which makes the final rounding to f32
// correct for every mode (double has more than 2*24+2 bits).
inline float fma_f32(float a, float b, float c, Round m) {
  if (m == Round::kRn) return std::fmaf(a, b, c);
  const double x = static_cast<double>(a) * b;
  const double s = x + c;
  if (!std::isfinite(s)) return double_to_float(s, m);
  const double bb = s - x;
  const double err = (x - (s - bb)) + (c - bb);
  double odd = s;
  if (err != 0 && (std::bit_cast<uint64_t>(s) & 1) == 0) {
    odd = std::nextafter(s, err > 0 ? INFINITY : -INFINITY);
  }
  return double_to_float(odd, m);
}

}  // namespace leap::sandbox::ptx
