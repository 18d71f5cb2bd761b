// Floating-point instructions: f32/f64 arithmetic with rounding modes, .ftz and .sat; fma/mad;
// div/rcp/sqrt/rsqrt; the approximate math (ex2, lg2, sin, cos, tanh); min/max/abs/neg/
// copysign; testp; setp on floats; f16/bf16 scalar and x2 arithmetic; and every cvt that
// involves a float type (rounding modes, saturation, f16/bf16 packing).
//
// Invariants: f32 add/sub/mul/div/sqrt with a directed rounding mode are computed in double and
// rounded once (double has enough bits for that to be exact rounding); f16/bf16 operations are
// computed in double and rounded once to the format; the approximate instructions use the
// correctly rounded libm function, which is within the hardware's stated error.
#include <cmath>
#include <limits>

#include "sandbox/ptx/exec_state.h"
#include "sandbox/ptx/ops.h"

namespace leap::sandbox::ptx {

namespace {

enum class FOp { kAdd, kSub, kMul, kDiv, kMin, kMax, kMinNaN, kMaxNaN };

template <FOp O, class T>
T apply(T a, T b) {
  switch (O) {
    case FOp::kAdd:
      return a + b;
    case FOp::kSub:
      return a - b;
    case FOp::kMul:
      return a * b;
    case FOp::kDiv:
      return a / b;
    case FOp::kMin:
      return std::fmin(a, b);
    case FOp::kMax:
      return std::fmax(a, b);
    case FOp::kMinNaN:
      return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN()
                                              : std::fmin(a, b);
    case FOp::kMaxNaN:
      return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN()
                                              : std::fmax(a, b);
  }
  return a;
}

inline float sat01(float v) {
  return std::isnan(v) ? 0.0f : v < 0 ? 0.0f : v > 1 ? 1.0f : v;
}

template <FOp O, Round R, bool kFtz, bool kSat>
uint32_t h_f32(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  float a = get<float>(r, in.a), b = get<float>(r, in.b);
  if (kFtz) {
    a = flush_f32(a);
    b = flush_f32(b);
  }
  float d;
  if constexpr (R == Round::kRn || O >= FOp::kMin) {
    d = apply<O, float>(a, b);
  } else {
    d = double_to_float(apply<O, double>(a, b), R);
  }
  if (kFtz) d = flush_f32(d);
  if (kSat) d = sat01(d);
  put<float>(r, in.d, d);
  return pc + 1;
}
template <FOp O>
uint32_t h_f64(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<double>(r, in.d, apply<O, double>(get<double>(r, in.a), get<double>(r, in.b)));
  return pc + 1;
}
template <Round R, bool kFtz, bool kSat>
uint32_t h_fma_f32(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  float a = get<float>(r, in.a), b = get<float>(r, in.b), c = get<float>(r, in.c);
  if (kFtz) {
    a = flush_f32(a);
    b = flush_f32(b);
    c = flush_f32(c);
  }
  float d = fma_f32(a, b, c, R);
  if (kFtz) d = flush_f32(d);
  if (kSat) d = sat01(d);
  put<float>(r, in.d, d);
  return pc + 1;
}
uint32_t h_fma_f64(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<double>(r, in.d, std::fma(get<double>(r, in.a), get<double>(r, in.b), get<double>(r, in.c)));
  return pc + 1;
}

enum class UOp {
  kNeg,
  kAbs,
  kRcp,
  kSqrt,
  kRsqrt,
  kEx2,
  kLg2,
  kSin,
  kCos,
  kTanh,
  kRint,
  kFloor,
  kCeil,
  kTrunc,
  kSat,
  kCopy
};
template <UOp O, class T>
T unary(T a) {
  switch (O) {
    case UOp::kNeg:
      return -a;
    case UOp::kAbs:
      return std::fabs(a);
    case UOp::kRcp:
      return T(1) / a;
    case UOp::kSqrt:
      return std::sqrt(a);
    case UOp::kRsqrt:
      return T(1) / std::sqrt(a);
    case UOp::kEx2:
      return std::exp2(a);
    case UOp::kLg2:
      return std::log2(a);
    case UOp::kSin:
      return std::sin(a);
    case UOp::kCos:
      return std::cos(a);
    case UOp::kTanh:
      return std::tanh(a);
    case UOp::kRint:
      return std::nearbyint(a);
    case UOp::kFloor:
      return std::floor(a);
    case UOp::kCeil:
      return std::ceil(a);
    case UOp::kTrunc:
      return std::trunc(a);
    case UOp::kSat:
      return std::isnan(a) ? T(0) : a < 0 ? T(0) : a > 1 ? T(1) : a;
    case UOp::kCopy:
      return a;
  }
  return a;
}
template <UOp O, bool kFtz>
uint32_t h_un_f32(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  float a = get<float>(r, in.a);
  if (kFtz) a = flush_f32(a);
  float d = unary<O, float>(a);
  if (kFtz) d = flush_f32(d);
  put<float>(r, in.d, d);
  return pc + 1;
}
template <UOp O>
uint32_t h_un_f64(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<double>(r, in.d, unary<O, double>(get<double>(r, in.a)));
  return pc + 1;
}
template <class T>
uint32_t h_copysign(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d, std::copysign(get<T>(r, in.b), get<T>(r, in.a)));
  return pc + 1;
}
// testp: aux = 0 finite, 1 infinite, 2 number, 3 notanumber, 4 normal, 5 subnormal.
template <class T>
uint32_t h_testp(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a);
  bool v = false;
  switch (in.aux) {
    case 0:
      v = std::isfinite(a);
      break;
    case 1:
      v = std::isinf(a);
      break;
    case 2:
      v = !std::isnan(a);
      break;
    case 3:
      v = std::isnan(a);
      break;
    case 4:
      v = std::isnormal(a);
      break;
    case 5:
      v = std::fpclassify(a) == FP_SUBNORMAL;
      break;
  }
  r[in.d] = v;
  return pc + 1;
}

// ---- setp on floats ---------------------------------------------------------------------------
enum class FCmp { kEq, kNe, kLt, kLe, kGt, kGe, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };
template <FCmp C>
bool fcmp(double a, double b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (C) {
    case FCmp::kEq:
      return !un && a == b;
    case FCmp::kNe:
      return !un && a != b;
    case FCmp::kLt:
      return !un && a < b;
    case FCmp::kLe:
      return !un && a <= b;
    case FCmp::kGt:
      return !un && a > b;
    case FCmp::kGe:
      return !un && a >= b;
    case FCmp::kEqu:
      return un || a == b;
    case FCmp::kNeu:
      return un || a != b;
    case FCmp::kLtu:
      return un || a < b;
    case FCmp::kLeu:
      return un || a <= b;
    case FCmp::kGtu:
      return un || a > b;
    case FCmp::kGeu:
      return un || a >= b;
    case FCmp::kNum:
      return !un;
    case FCmp::kNan:
      return un;
  }
  return false;
}
inline bool combine(bool v, const uint64_t* r, const Instr& in) {
  const uint32_t op = in.aux & 3;
  if (op == 0) return v;
  const bool c = (r[in.c] != 0) != ((in.aux & 4) != 0);
  return op == 1 ? (v && c) : op == 2 ? (v || c) : (v != c);
}

// Reads lane `i` of a slot as a double: f32, f64, f16 or bf16 (lanes of 16 bits).
enum class Fmt : uint8_t { kF32, kF64, kF16, kBF16 };
template <Fmt F>
inline double lane(const uint64_t* r, uint32_t s, int i) {
  if constexpr (F == Fmt::kF32) return get<float>(r, s);
  if constexpr (F == Fmt::kF64) return get<double>(r, s);
  const uint16_t h = static_cast<uint16_t>(r[s] >> (16 * i));
  if constexpr (F == Fmt::kF16) return half_to_float(h);
  return bf16_to_float(h);
}
template <Fmt F>
inline uint64_t encode(double v, Round m = Round::kRn) {
  if constexpr (F == Fmt::kF16) return double_to_half(v, m);
  if constexpr (F == Fmt::kBF16) return double_to_bf16(v, m);
  if constexpr (F == Fmt::kF32) return std::bit_cast<uint32_t>(double_to_float(v, m));
  return std::bit_cast<uint64_t>(v);
}

template <Fmt F, FCmp C, bool kFtz>
uint32_t h_setp_f(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  double a = lane<F>(r, in.a, 0), b = lane<F>(r, in.b, 0);
  if (kFtz) {
    a = flush_f32(static_cast<float>(a));
    b = flush_f32(static_cast<float>(b));
  }
  const bool v = fcmp<C>(a, b);
  r[in.d] = combine(v, r, in);
  r[in.e] = combine(!v, r, in);
  r[kSlotSink] = 0;
  return pc + 1;
}
// setp on f16x2/bf16x2: d gets the low lane's result, e the high lane's.
template <Fmt F, FCmp C>
uint32_t h_setp_x2(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const bool lo = fcmp<C>(lane<F>(r, in.a, 0), lane<F>(r, in.b, 0));
  const bool hi = fcmp<C>(lane<F>(r, in.a, 1), lane<F>(r, in.b, 1));
  r[in.d] = combine(lo, r, in);
  r[in.e] = combine(hi, r, in);
  r[kSlotSink] = 0;
  return pc + 1;
}

// ---- f16 / bf16 arithmetic (scalar and x2) ----------------------------------------------------
enum class HOp { kAdd, kSub, kMul, kFma, kNeg, kAbs, kMin, kMax, kEx2, kTanh, kMinNaN, kMaxNaN };
template <Fmt F, HOp O, int kLanes, bool kSat>
uint32_t h_half(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  uint64_t d = 0;
  for (int i = 0; i < kLanes; ++i) {
    const double a = lane<F>(r, in.a, i);
    double v = 0;
    switch (O) {
      case HOp::kAdd:
        v = a + lane<F>(r, in.b, i);
        break;
      case HOp::kSub:
        v = a - lane<F>(r, in.b, i);
        break;
      case HOp::kMul:
        v = a * lane<F>(r, in.b, i);
        break;
      case HOp::kFma:
        v = std::fma(a, lane<F>(r, in.b, i), lane<F>(r, in.c, i));
        break;
      case HOp::kNeg:
        v = -a;
        break;
      case HOp::kAbs:
        v = std::fabs(a);
        break;
      case HOp::kMin:
        v = std::fmin(a, lane<F>(r, in.b, i));
        break;
      case HOp::kMax:
        v = std::fmax(a, lane<F>(r, in.b, i));
        break;
      case HOp::kMinNaN:
        v = apply<FOp::kMinNaN, double>(a, lane<F>(r, in.b, i));
        break;
      case HOp::kMaxNaN:
        v = apply<FOp::kMaxNaN, double>(a, lane<F>(r, in.b, i));
        break;
      case HOp::kEx2:
        v = std::exp2(static_cast<float>(a));
        break;
      case HOp::kTanh:
        v = std::tanh(static_cast<float>(a));
        break;
    }
    if (kSat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
    d |= encode<F>(v) << (16 * i);
  }
  r[in.d] = d;
  return pc + 1;
}

// ---- cvt involving floats -------------------------------------------------------------------
// aux: bits 0-7 dst Type, 8-15 src Type, 16-17 Round, bit 18 integer rounding, 19 sat, 20 ftz.
double read_as_double(const uint64_t* r, uint32_t s, Type t) {
  switch (t) {
    case Type::kF16:
      return half_to_float(static_cast<uint16_t>(r[s]));
    case Type::kBF16:
      return bf16_to_float(static_cast<uint16_t>(r[s]));
    case Type::kF32:
      return get<float>(r, s);
    case Type::kF64:
      return get<double>(r, s);
    case Type::kU8:
      return static_cast<uint8_t>(r[s]);
    case Type::kU16:
      return static_cast<uint16_t>(r[s]);
    case Type::kU32:
      return static_cast<uint32_t>(r[s]);
    case Type::kU64:
      return static_cast<double>(r[s]);
    case Type::kS8:
      return static_cast<int8_t>(r[s]);
    case Type::kS16:
      return static_cast<int16_t>(r[s]);
    case Type::kS32:
      return static_cast<int32_t>(r[s]);
    case Type::kS64:
      return static_cast<double>(static_cast<int64_t>(r[s]));
    default:
      return 0;
  }
}
double round_integral(double v, Round m) {
  switch (m) {
    case Round::kRn:
      return std::nearbyint(v);
    case Round::kRz:
      return std::trunc(v);
    case Round::kRm:
      return std::floor(v);
    case Round::kRp:
      return std::ceil(v);
  }
  return v;
}
uint32_t h_cvt_float(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const Type dst = static_cast<Type>(in.aux & 0xff);
  const Type src = static_cast<Type>((in.aux >> 8) & 0xff);
  const Round m = static_cast<Round>((in.aux >> 16) & 3);
  const bool int_round = (in.aux >> 18) & 1, sat = (in.aux >> 19) & 1, ftz = (in.aux >> 20) & 1;
  // 64-bit integers to f32/f64 with round-to-nearest: C++'s conversion rounds correctly.
  if (m == Round::kRn && (src == Type::kS64 || src == Type::kU64) && is_float(dst)) {
    if (dst == Type::kF32) {
      put<float>(r, in.d,
                 src == Type::kS64 ? static_cast<float>(static_cast<int64_t>(r[in.a]))
                                   : static_cast<float>(r[in.a]));
      return pc + 1;
    }
    if (dst == Type::kF64) {
      put<double>(r, in.d,
                  src == Type::kS64 ? static_cast<double>(static_cast<int64_t>(r[in.a]))
                                    : static_cast<double>(r[in.a]));
      return pc + 1;
    }
  }
  double v = read_as_double(r, in.a, src);
  if (ftz && src == Type::kF32) v = flush_f32(static_cast<float>(v));
  if (is_float(dst)) {
    if (int_round) v = round_integral(v, m);
    if (sat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
    switch (dst) {
      case Type::kF16:
        r[in.d] = double_to_half(v, m);
        break;
      case Type::kBF16:
        r[in.d] = double_to_bf16(v, m);
        break;
      case Type::kF32: {
        float f = double_to_float(v, m);
        if (ftz) f = flush_f32(f);
        put<float>(r, in.d, f);
        break;
      }
      default:
        put<double>(r, in.d, v);
        break;
    }
    return pc + 1;
  }
  // Float to integer: round, then saturate to the destination's range (NaN gives 0).
  v = round_integral(v, m);
  const int bits = type_bits(dst);
  double lo, hi;
  if (is_signed(dst)) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1) - 1;
  } else {
    lo = 0;
    hi = std::ldexp(1.0, bits) - 1;
  }
  uint64_t out;
  if (std::isnan(v)) {
    out = 0;
  } else if (v <= lo) {
    out = static_cast<uint64_t>(static_cast<int64_t>(lo));
  } else if (v >= hi) {
    out = bits == 64 && !is_signed(dst) ? ~0ull : static_cast<uint64_t>(static_cast<int64_t>(hi));
  } else {
    out =
        is_signed(dst) ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
  }
  r[in.d] = bits == 64 ? out : (out & ((1ull << bits) - 1));
  return pc + 1;
}
// The hot conversions, without the generic decoding.
uint32_t h_cvt_rn_f32_s32(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<float>(r, in.d, static_cast<float>(get<int32_t>(r, in.a)));
  return pc + 1;
}
uint32_t h_cvt_rn_f32_u32(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<float>(r, in.d, static_cast<float>(get<uint32_t>(r, in.a)));
  return pc + 1;
}
// cvt.rn.{f16,bf16}x2.f32 d, a, b: d's upper half from a, lower half from b.
template <Fmt F>
uint32_t h_cvt_pack_x2(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const Round m = static_cast<Round>(in.aux & 3);
  r[in.d] = (encode<F>(get<float>(r, in.a), m) << 16) | encode<F>(get<float>(r, in.b), m);
  return pc + 1;
}

template <FCmp C>
Handler setp_for(Type t, bool ftz) {
  switch (t) {
    case Type::kF32:
      return ftz ? &h_setp_f<Fmt::kF32, C, true> : &h_setp_f<Fmt::kF32, C, false>;
    case Type::kF64:
      return &h_setp_f<Fmt::kF64, C, false>;
    case Type::kF16:
      return &h_setp_f<Fmt::kF16, C, false>;
    case Type::kBF16:
      return &h_setp_f<Fmt::kBF16, C, false>;
    case Type::kF16x2:
      return &h_setp_x2<Fmt::kF16, C>;
    case Type::kBF16x2:
      return &h_setp_x2<Fmt::kBF16, C>;
    default:
      return nullptr;
  }
}

Handler select_setp(const OpSpec& op) {
  static const char* const kNames[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                       "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  const Type t = op.type(0);
  for (size_t i = 0; i < 14; ++i) {
    if (!op.has(kNames[i])) continue;
    switch (static_cast<FCmp>(i)) {
#define LEAP_CASE(C) \
  case FCmp::C:      \
    return setp_for<FCmp::C>(t, op.ftz);
      LEAP_CASE(kEq)
      LEAP_CASE(kNe) LEAP_CASE(kLt) LEAP_CASE(kLe) LEAP_CASE(kGt) LEAP_CASE(kGe) LEAP_CASE(kEqu)
          LEAP_CASE(kNeu) LEAP_CASE(kLtu) LEAP_CASE(kLeu) LEAP_CASE(kGtu) LEAP_CASE(kGeu)
              LEAP_CASE(kNum) LEAP_CASE(kNan)
#undef LEAP_CASE
    }
  }
  return nullptr;
}

template <FOp O>
Handler f32_binary(const OpSpec& op) {
  const bool f = op.ftz, s = op.sat;
  switch (op.round) {
#define LEAP_R(R)                                                                       \
  case Round::R:                                                                        \
    return f ? (s ? &h_f32<O, Round::R, true, true> : &h_f32<O, Round::R, true, false>) \
             : (s ? &h_f32<O, Round::R, false, true> : &h_f32<O, Round::R, false, false>);
    LEAP_R(kRn) LEAP_R(kRz) LEAP_R(kRm) LEAP_R(kRp)
#undef LEAP_R
  }
  return nullptr;
}
Handler f32_fma(const OpSpec& op) {
  const bool f = op.ftz, s = op.sat;
  switch (op.round) {
#define LEAP_R(R)                                                                         \
  case Round::R:                                                                          \
    return f ? (s ? &h_fma_f32<Round::R, true, true> : &h_fma_f32<Round::R, true, false>) \
             : (s ? &h_fma_f32<Round::R, false, true> : &h_fma_f32<Round::R, false, false>);
    LEAP_R(kRn) LEAP_R(kRz) LEAP_R(kRm) LEAP_R(kRp)
#undef LEAP_R
  }
  return nullptr;
}
template <UOp O>
Handler f_unary(const OpSpec& op) {
  if (op.type(0) == Type::kF32) return op.ftz ? &h_un_f32<O, true> : &h_un_f32<O, false>;
  if (op.type(0) == Type::kF64) return &h_un_f64<O>;
  return nullptr;
}
template <HOp O>
Handler half_op(Type t, bool sat) {
  switch (t) {
    case Type::kF16:
      return sat ? &h_half<Fmt::kF16, O, 1, true> : &h_half<Fmt::kF16, O, 1, false>;
    case Type::kF16x2:
      return sat ? &h_half<Fmt::kF16, O, 2, true> : &h_half<Fmt::kF16, O, 2, false>;
    case Type::kBF16:
      return &h_half<Fmt::kBF16, O, 1, false>;
    case Type::kBF16x2:
      return &h_half<Fmt::kBF16, O, 2, false>;
    default:
      return nullptr;
  }
}

bool is_half(Type t) {
  return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2;
}

}  // namespace

bool select_float(const OpSpec& op, Selection* sel) {
  const std::string& b = op.base;
  const Type t = op.type(0);
  sel->imm_type = t;
  if (b == "cvt") {
    const Type dst = op.type(0), src = op.type(1);
    if (!is_float(dst) && !is_float(src)) return false;
    sel->imm_type = src;
    if ((dst == Type::kF16x2 || dst == Type::kBF16x2) && src == Type::kF32) {
      sel->fn = dst == Type::kF16x2 ? &h_cvt_pack_x2<Fmt::kF16> : &h_cvt_pack_x2<Fmt::kBF16>;
      sel->aux = static_cast<uint32_t>(op.round);
      return true;
    }
    if (dst == Type::kF16x2 || dst == Type::kBF16x2 || src == Type::kF16x2 ||
        src == Type::kBF16x2) {
      return true;  // other packed conversions: not implemented (fn stays null)
    }
    if (dst == Type::kF32 && !op.ftz && !op.sat && op.round == Round::kRn && !op.int_round) {
      if (src == Type::kS32) sel->fn = &h_cvt_rn_f32_s32;
      if (src == Type::kU32) sel->fn = &h_cvt_rn_f32_u32;
      if (sel->fn) return true;
    }
    // Float to integer without a rounding modifier is not valid PTX; default to rzi anyway.
    Round m = op.round;
    if (is_float(src) && !is_float(dst) && !op.has_round) m = Round::kRz;
    sel->fn = &h_cvt_float;
    sel->aux = static_cast<uint32_t>(dst) | (static_cast<uint32_t>(src) << 8) |
               (static_cast<uint32_t>(m) << 16) | (op.int_round ? 1u << 18 : 0) |
               (op.sat ? 1u << 19 : 0) | (op.ftz ? 1u << 20 : 0);
    return true;
  }
  if (b == "setp" && is_float(t)) {
    sel->fn = select_setp(op);
    sel->aux = op.has("and") ? 1 : op.has("or") ? 2 : op.has("xor") ? 3 : 0;
    return true;
  }
  if (b == "testp") {
    static const char* const kNames[] = {"finite",     "infinite", "number",
                                         "notanumber", "normal",   "subnormal"};
    for (uint32_t i = 0; i < 6; ++i) {
      if (op.has(kNames[i])) sel->aux = i;
    }
    sel->fn = t == Type::kF32 ? &h_testp<float> : t == Type::kF64 ? &h_testp<double> : nullptr;
    return true;
  }
  if (!is_float(t)) return false;
  if (is_half(t)) {
    const bool nan = op.has("NaN");
    if (b == "add")
      sel->fn = half_op<HOp::kAdd>(t, op.sat);
    else if (b == "sub")
      sel->fn = half_op<HOp::kSub>(t, op.sat);
    else if (b == "mul")
      sel->fn = half_op<HOp::kMul>(t, op.sat);
    else if (b == "fma")
      sel->fn = half_op<HOp::kFma>(t, op.sat);
    else if (b == "neg")
      sel->fn = half_op<HOp::kNeg>(t, false);
    else if (b == "abs")
      sel->fn = half_op<HOp::kAbs>(t, false);
    else if (b == "min")
      sel->fn = nan ? half_op<HOp::kMinNaN>(t, false) : half_op<HOp::kMin>(t, false);
    else if (b == "max")
      sel->fn = nan ? half_op<HOp::kMaxNaN>(t, false) : half_op<HOp::kMax>(t, false);
    else if (b == "ex2")
      sel->fn = half_op<HOp::kEx2>(t, false);
    else if (b == "tanh")
      sel->fn = half_op<HOp::kTanh>(t, false);
    else
      return false;
    return true;
  }
  const bool f32 = t == Type::kF32;
  const bool nan = op.has("NaN");
  if (b == "add")
    sel->fn = f32 ? f32_binary<FOp::kAdd>(op) : &h_f64<FOp::kAdd>;
  else if (b == "sub")
    sel->fn = f32 ? f32_binary<FOp::kSub>(op) : &h_f64<FOp::kSub>;
  else if (b == "mul")
    sel->fn = f32 ? f32_binary<FOp::kMul>(op) : &h_f64<FOp::kMul>;
  else if (b == "div")
    sel->fn = f32 ? f32_binary<FOp::kDiv>(op) : &h_f64<FOp::kDiv>;
  else if (b == "min")
    sel->fn = f32 ? (nan ? f32_binary<FOp::kMinNaN>(op) : f32_binary<FOp::kMin>(op)) : nullptr;
  else if (b == "max")
    sel->fn = f32 ? f32_binary<FOp::kMax>(op) : nullptr;
  else if (b == "fma" || b == "mad")
    sel->fn = f32 ? f32_fma(op) : &h_fma_f64;
  else if (b == "neg")
    sel->fn = f_unary<UOp::kNeg>(op);
  else if (b == "abs")
    sel->fn = f_unary<UOp::kAbs>(op);
  else if (b == "rcp")
    sel->fn = f_unary<UOp::kRcp>(op);
  else if (b == "sqrt")
    sel->fn = f_unary<UOp::kSqrt>(op);
  else if (b == "rsqrt")
    sel->fn = f_unary<UOp::kRsqrt>(op);
  else if (b == "ex2")
    sel->fn = f_unary<UOp::kEx2>(op);
  else if (b == "lg2")
    sel->fn = f_unary<UOp::kLg2>(op);
  else if (b == "sin")
    sel->fn = f_unary<UOp::kSin>(op);
  else if (b == "cos")
    sel->fn = f_unary<UOp::kCos>(op);
  else if (b == "tanh")
    sel->fn = f_unary<UOp::kTanh>(op);
  else if (b == "copysign")
    sel->fn = f32 ? &h_copysign<float> : &h_copysign<double>;
  else
    return false;
  if (b == "min" && !f32) sel->fn = nan ? &h_f64<FOp::kMinNaN> : &h_f64<FOp::kMin>;
  if (b == "max" && !f32) sel->fn = nan ? &h_f64<FOp::kMaxNaN> : &h_f64<FOp::kMax>;
  if (b == "max" && f32 && nan) sel->fn = f32_binary<FOp::kMaxNaN>(op);
  // f64 arithmetic supports round-to-nearest only (what NVRTC emits for double code).
  if (!f32 && op.has_round && op.round != Round::kRn && b != "rcp" && b != "sqrt")
    sel->fn = nullptr;
  return true;
}

}  // namespace leap::sandbox::ptx
