// Conversions of dtype_convert.h. The narrowing routine is generic over the IEEE-style layout
// (exponent bits, mantissa bits), so f16 and bf16 share one audited path. It works on the bits
// of the double (input generation converts millions of values per trial, so no libm calls):
// the 53-bit significand is shifted right to the target's unit in the last place, rounded to
// nearest with ties to even on the dropped bits, then encoded, letting a carry out of the
// mantissa bump the exponent.
#include "tasks/dtype_convert.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace leap::tasks {
namespace {

uint32_t narrow_float_bits(double x, int ebits, int mbits) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t sign = (u >> 63) ? 1u << (ebits + mbits) : 0u;
  const uint32_t exp_all_ones = ((1u << ebits) - 1) << mbits;
  const uint64_t abs_bits = u & ~(uint64_t{1} << 63);
  if (abs_bits >= 0x7FF0000000000000ull) {  // inf or NaN
    return abs_bits == 0x7FF0000000000000ull ? sign | exp_all_ones
                                             : exp_all_ones | (1u << (mbits - 1));  // quiet NaN
  }
  const int bias = (1 << (ebits - 1)) - 1;
  const int emin = 1 - bias;
  const int e = static_cast<int>(abs_bits >> 52) - 1023;  // unbiased exponent of x
  // Below half the smallest subnormal (and every double subnormal): rounds to zero.
  if (e < emin - mbits - 1) return sign;
  const uint64_t significand = (abs_bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  // Exponent of one unit in the last place of the result: fixed in the subnormal range.
  int quantum_exp = (e < emin ? emin : e) - mbits;
  const int shift = quantum_exp - (e - 52);  // bits of the significand below that unit (>= 42)
  uint64_t m = significand >> shift;
  const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (m & 1))) ++m;
  if (m == (uint64_t{1} << (mbits + 1))) {  // rounding carried into a new binade
    m >>= 1;
    ++quantum_exp;
  }
  const auto mi = static_cast<uint32_t>(m);
  if (mi < (1u << mbits)) return sign | mi;  // subnormal (or rounded to zero)
  const int exponent = quantum_exp + mbits;
  if (exponent > bias) return sign | exp_all_ones;  // overflow: infinity
  return sign | (static_cast<uint32_t>(exponent + bias) << mbits) | (mi - (1u << mbits));
}

double widen_float_bits(uint32_t bits, int ebits, int mbits) {
  const bool neg = (bits >> (ebits + mbits)) & 1u;
  const uint32_t ef = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t mf = bits & ((1u << mbits) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  double v;
  if (ef == (1u << ebits) - 1) {
    v = mf ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(mf), 1 - bias - mbits);
  } else {
    v = std::ldexp(static_cast<double>(mf + (1u << mbits)), static_cast<int>(ef) - bias - mbits);
  }
  return neg ? -v : v;
}

template <class T>
void store(uint8_t* data, size_t index, T v) {
  std::memcpy(data + index * sizeof(T), &v, sizeof(T));
}

// Round to nearest and clamp into T's range; NaN becomes 0 (integers have no NaN).
template <class T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  v = std::nearbyint(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  // For int64 the max is not representable in double: compare against 2^63 instead.
  constexpr double hi_excl = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi_excl) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

uint16_t f16_bits_from_double(double x) {
  return static_cast<uint16_t>(narrow_float_bits(x, 5, 10));
}
uint16_t bf16_bits_from_double(double x) {
  return static_cast<uint16_t>(narrow_float_bits(x, 8, 7));
}
double f16_bits_to_double(uint16_t bits) {
  return widen_float_bits(bits, 5, 10);
}
double bf16_bits_to_double(uint16_t bits) {
  return widen_float_bits(bits, 8, 7);
}

double read_element(const uint8_t* data, DType dtype, size_t index) {
  switch (dtype) {
    case DType::kF32:
      return load<float>(data, index);
    case DType::kF16:
      return f16_bits_to_double(load<uint16_t>(data, index));
    case DType::kBF16:
      return bf16_bits_to_double(load<uint16_t>(data, index));
    case DType::kI32:
      return load<int32_t>(data, index);
    case DType::kI64:
      return static_cast<double>(load<int64_t>(data, index));
    case DType::kU8:
      return load<uint8_t>(data, index);
  }
  return 0;
}

void write_element(uint8_t* data, DType dtype, size_t index, double value) {
  switch (dtype) {
    case DType::kF32:
      store<float>(data, index, static_cast<float>(value));
      return;
    case DType::kF16:
      store<uint16_t>(data, index, f16_bits_from_double(value));
      return;
    case DType::kBF16:
      store<uint16_t>(data, index, bf16_bits_from_double(value));
      return;
    case DType::kI32:
      store<int32_t>(data, index, saturate<int32_t>(value));
      return;
    case DType::kI64:
      store<int64_t>(data, index, saturate<int64_t>(value));
      return;
    case DType::kU8:
      store<uint8_t>(data, index, saturate<uint8_t>(value));
      return;
  }
}

}  // namespace leap::tasks
