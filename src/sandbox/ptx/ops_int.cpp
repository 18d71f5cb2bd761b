// Integer, bit and predicate instructions: add/sub/mul/mad (lo, hi, wide, carry chains),
// div/rem, min/max, abs/neg, logic, shifts, popc/clz/brev, bfe/bfi, prmt, lop3, shf, mov,
// selp, integer setp and integer-to-integer cvt.
//
// Invariants: arithmetic wraps as on the GPU (done in unsigned types, never C++ signed
// overflow); division by zero and INT_MIN / -1 give the values the hardware gives, never a trap.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sandbox/ptx/exec_state.h"
#include "sandbox/ptx/ops.h"

namespace leap::sandbox::ptx {

namespace {

template <class T>
using U = std::make_unsigned_t<T>;
// Unsigned arithmetic at least 32 bits wide, so 16-bit products never promote to signed int.
template <class T>
using W = std::conditional_t<(sizeof(T) < 4), uint32_t, U<T>>;

#define LEAP_INT_BINARY(NAME, EXPR)                                 \
  template <class T>                                                \
  uint32_t NAME(Exec&, uint64_t* r, const Instr& in, uint32_t pc) { \
    const T a = get<T>(r, in.a);                                    \
    const T b = get<T>(r, in.b);                                    \
    put<T>(r, in.d, static_cast<T>(EXPR));                          \
    return pc + 1;                                                  \
  }
LEAP_INT_BINARY(h_add, W<T>(a) + W<T>(b))
LEAP_INT_BINARY(h_sub, W<T>(a) - W<T>(b))
LEAP_INT_BINARY(h_mul_lo, W<T>(a) * W<T>(b))
LEAP_INT_BINARY(h_min, a < b ? a : b)
LEAP_INT_BINARY(h_max, a < b ? b : a)
LEAP_INT_BINARY(h_and, a& b)
LEAP_INT_BINARY(h_or, a | b)
LEAP_INT_BINARY(h_xor, a ^ b)
#undef LEAP_INT_BINARY

template <class T>
T mul_hi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<Wide>(a) * static_cast<Wide>(b)) >> 64);
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return static_cast<T>((static_cast<Wide>(a) * static_cast<Wide>(b)) >> (8 * sizeof(T)));
  }
}
template <class T>
using Twice =
    std::conditional_t<sizeof(T) == 2, std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <class T>
uint32_t h_mul_hi(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d, mul_hi<T>(get<T>(r, in.a), get<T>(r, in.b)));
  return pc + 1;
}
template <class T>
uint32_t h_mul_wide(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  using D = Twice<T>;
  put<D>(r, in.d,
         static_cast<D>(static_cast<D>(get<T>(r, in.a)) * static_cast<D>(get<T>(r, in.b))));
  return pc + 1;
}
template <class T>
uint32_t h_mad_lo(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d,
         static_cast<T>(W<T>(get<T>(r, in.a)) * W<T>(get<T>(r, in.b)) + W<T>(get<T>(r, in.c))));
  return pc + 1;
}
template <class T>
uint32_t h_mad_hi(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d,
         static_cast<T>(W<T>(mul_hi<T>(get<T>(r, in.a), get<T>(r, in.b))) + W<T>(get<T>(r, in.c))));
  return pc + 1;
}
template <class T>
uint32_t h_mad_wide(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  using D = Twice<T>;
  using UD = U<D>;
  const UD prod =
      static_cast<UD>(static_cast<D>(get<T>(r, in.a)) * static_cast<D>(get<T>(r, in.b)));
  put<D>(r, in.d, static_cast<D>(prod + static_cast<UD>(get<D>(r, in.c))));
  return pc + 1;
}

// Carry chains (add.cc, addc, sub.cc, subc, mad.lo.cc, madc): the carry lives in kSlotCarry.
template <class T, bool kIn, bool kOut, bool kSub>
uint32_t h_carry(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  using UT = U<T>;
  const UT a = static_cast<UT>(r[in.a]);
  const UT b = static_cast<UT>(r[in.b]);
  const UT cin = kIn ? static_cast<UT>(r[kSlotCarry] & 1) : 0;
  UT d;
  uint64_t cout;
  if constexpr (kSub) {
    d = static_cast<UT>(a - b - cin);
    cout = (static_cast<unsigned __int128>(b) + cin > a) ? 1 : 0;
  } else {
    const unsigned __int128 s = static_cast<unsigned __int128>(a) + b + cin;
    d = static_cast<UT>(s);
    cout = static_cast<uint64_t>(s >> (8 * sizeof(UT))) & 1;
  }
  r[in.d] = d;
  if (kOut) r[kSlotCarry] = cout;
  return pc + 1;
}
template <class T, bool kHi, bool kIn, bool kOut>
uint32_t h_mad_carry(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  using UT = U<T>;
  const T a = get<T>(r, in.a), b = get<T>(r, in.b);
  const UT prod = kHi ? static_cast<UT>(mul_hi<T>(a, b)) : static_cast<UT>(W<T>(a) * W<T>(b));
  const UT c = static_cast<UT>(r[in.c]);
  const unsigned __int128 s =
      static_cast<unsigned __int128>(prod) + c + (kIn ? (r[kSlotCarry] & 1) : 0);
  r[in.d] = static_cast<UT>(s);
  if (kOut) r[kSlotCarry] = static_cast<uint64_t>(s >> (8 * sizeof(UT))) & 1;
  return pc + 1;
}

template <class T>
uint32_t h_div(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a), b = get<T>(r, in.b);
  T d;
  if (b == 0) {
    d = static_cast<T>(~U<T>{0});
  } else if (std::is_signed_v<T> && a == std::numeric_limits<T>::min() && b == T(-1)) {
    d = a;
  } else {
    d = static_cast<T>(a / b);
  }
  put<T>(r, in.d, d);
  return pc + 1;
}
template <class T>
uint32_t h_rem(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a), b = get<T>(r, in.b);
  T d;
  if (b == 0) {
    d = a;
  } else if (std::is_signed_v<T> && b == T(-1)) {
    d = 0;
  } else {
    d = static_cast<T>(a % b);
  }
  put<T>(r, in.d, d);
  return pc + 1;
}
template <class T>
uint32_t h_abs(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a);
  put<T>(r, in.d, a < 0 ? static_cast<T>(W<T>(0) - W<T>(a)) : a);
  return pc + 1;
}
template <class T>
uint32_t h_neg(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d, static_cast<T>(W<T>(0) - W<T>(get<T>(r, in.a))));
  return pc + 1;
}
template <class T>
uint32_t h_not(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d, static_cast<T>(~get<T>(r, in.a)));
  return pc + 1;
}
uint32_t h_not_pred(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  r[in.d] = r[in.a] ^ 1;
  return pc + 1;
}
template <class T>
uint32_t h_cnot(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  put<T>(r, in.d, static_cast<T>(get<T>(r, in.a) == 0 ? 1 : 0));
  return pc + 1;
}
template <class T>
uint32_t h_shl(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t s = static_cast<uint32_t>(r[in.b]);
  const U<T> a = static_cast<U<T>>(r[in.a]);
  put<U<T>>(r, in.d, s >= 8 * sizeof(T) ? U<T>{0} : static_cast<U<T>>(W<T>(a) << s));
  return pc + 1;
}
template <class T>
uint32_t h_shr(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t s = static_cast<uint32_t>(r[in.b]);
  const T a = get<T>(r, in.a);
  constexpr uint32_t bits = 8 * sizeof(T);
  T d;
  if constexpr (std::is_signed_v<T>) {
    d = static_cast<T>(a >> (s >= bits ? bits - 1 : s));
  } else {
    d = s >= bits ? T{0} : static_cast<T>(a >> s);
  }
  put<T>(r, in.d, d);
  return pc + 1;
}
template <class T>
uint32_t h_popc(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  r[in.d] = static_cast<uint32_t>(std::popcount(static_cast<U<T>>(r[in.a])));
  return pc + 1;
}
template <class T>
uint32_t h_clz(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  r[in.d] = static_cast<uint32_t>(std::countl_zero(static_cast<U<T>>(r[in.a])));
  return pc + 1;
}
template <class T>
uint32_t h_brev(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  U<T> a = static_cast<U<T>>(r[in.a]), d = 0;
  for (size_t i = 0; i < 8 * sizeof(T); ++i)
    d |= static_cast<U<T>>(((a >> i) & 1) << (8 * sizeof(T) - 1 - i));
  r[in.d] = d;
  return pc + 1;
}
// bfind: the position of the most significant non-sign bit (0xffffffff if none); with
// .shiftamt (aux 1), the left shift that would bring it to the top instead.
template <class T>
uint32_t h_bfind(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  constexpr int bits = 8 * sizeof(T);
  U<T> a = static_cast<U<T>>(r[in.a]);
  if (std::is_signed_v<T> && static_cast<T>(a) < 0) a = static_cast<U<T>>(~a);
  uint32_t d = 0xffffffffu;
  if (a != 0) {
    const int pos = bits - 1 - std::countl_zero(a);
    d = in.aux ? static_cast<uint32_t>(bits - 1 - pos) : static_cast<uint32_t>(pos);
  }
  r[in.d] = d;
  return pc + 1;
}
template <class T>
uint32_t h_bfe(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  constexpr uint32_t bits = 8 * sizeof(T);
  const U<T> a = static_cast<U<T>>(r[in.a]);
  const uint32_t pos = static_cast<uint32_t>(r[in.b]) & 0xff;
  const uint32_t len = static_cast<uint32_t>(r[in.c]) & 0xff;
  U<T> d = 0;
  for (uint32_t i = 0; i < bits; ++i) {
    uint32_t src;
    if (i < len && pos + i < bits) {
      src = pos + i;
    } else if (std::is_signed_v<T>) {  // sign-fill from the field's top bit (or the msb)
      src = len == 0 ? bits : std::min(pos + len - 1, bits - 1);
    } else {
      break;
    }
    if (src < bits && ((a >> src) & 1)) d |= U<T>{1} << i;
  }
  r[in.d] = d;
  return pc + 1;
}
template <class T>
uint32_t h_bfi(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  constexpr uint32_t bits = 8 * sizeof(T);
  const U<T> a = static_cast<U<T>>(r[in.a]);
  U<T> d = static_cast<U<T>>(r[in.b]);
  const uint32_t pos = static_cast<uint32_t>(r[in.c]) & 0xff;
  const uint32_t len = static_cast<uint32_t>(r[in.e]) & 0xff;
  for (uint32_t i = 0; i < len && pos + i < bits; ++i) {
    const U<T> bit = U<T>{1} << (pos + i);
    d = ((a >> i) & 1) ? (d | bit) : (d & ~bit);
  }
  r[in.d] = d;
  return pc + 1;
}
uint32_t h_prmt(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t bytes = (r[in.b] << 32) | (r[in.a] & 0xffffffffu);
  const uint32_t sel = static_cast<uint32_t>(r[in.c]);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (4 * i)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (s & 7))) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;  // sign-replicate mode
    d |= byte << (8 * i);
  }
  r[in.d] = d;
  return pc + 1;
}
// prmt with a mode (aux: 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16): the selectors come from
// the low bits of c as the PTX ISA tables give them.
uint32_t h_prmt_mode(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t bytes = (r[in.b] << 32) | (r[in.a] & 0xffffffffu);
  const uint32_t s = static_cast<uint32_t>(r[in.c]) & 3;
  uint32_t sel[4];
  switch (in.aux) {
    case 1:
      for (uint32_t i = 0; i < 4; ++i) sel[i] = (s + i) & 7;
      break;
    case 2:
      for (uint32_t i = 0; i < 4; ++i) sel[i] = (s + 8 - i) & 7;
      break;
    case 3:
      for (uint32_t i = 0; i < 4; ++i) sel[i] = s;
      break;
    case 4:
      for (uint32_t i = 0; i < 4; ++i) sel[i] = std::max(i, s);
      break;
    case 5:
      for (uint32_t i = 0; i < 4; ++i) sel[i] = std::min(i, s);
      break;
    default: {
      const uint32_t lo = (s & 1) * 2;
      sel[0] = lo;
      sel[1] = lo + 1;
      sel[2] = lo;
      sel[3] = lo + 1;
      break;
    }
  }
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) d |= static_cast<uint32_t>((bytes >> (8 * sel[i])) & 0xff) << (8 * i);
  r[in.d] = d;
  return pc + 1;
}
uint32_t h_lop3(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t a = static_cast<uint32_t>(r[in.a]), b = static_cast<uint32_t>(r[in.b]),
                 c = static_cast<uint32_t>(r[in.c]);
  const uint32_t lut = static_cast<uint32_t>(r[in.e]) & 0xff;
  uint32_t d = 0;
  for (int i = 0; i < 8; ++i) {
    if (!((lut >> i) & 1)) continue;
    d |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  }
  r[in.d] = d;
  return pc + 1;
}
// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of b:a by c.
template <bool kLeft, bool kWrap>
uint32_t h_shf(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t v = ((r[in.b] & 0xffffffffu) << 32) | (r[in.a] & 0xffffffffu);
  uint32_t n = static_cast<uint32_t>(r[in.c]);
  n = kWrap ? (n & 31) : std::min(n, 32u);
  r[in.d] = kLeft ? static_cast<uint32_t>((v << n) >> 32) : static_cast<uint32_t>(v >> n);
  return pc + 1;
}

// mul24/mad24: the product of the low 24 bits (sign-extended for .s32), .lo or .hi of the
// 48-bit product (aux 1 = hi), plus c for mad24.
template <class T, bool kMad>
uint32_t h_mul24(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  auto low24 = [](uint64_t v) -> int64_t {
    const uint32_t x = static_cast<uint32_t>(v) & 0xffffffu;
    if (std::is_signed_v<T> && (x & 0x800000u)) return static_cast<int64_t>(x) - (1 << 24);
    return x;
  };
  const int64_t prod = low24(r[in.a]) * low24(r[in.b]);
  uint32_t d = in.aux ? static_cast<uint32_t>(static_cast<uint64_t>(prod) >> 16)
                      : static_cast<uint32_t>(prod);
  if (kMad) d += static_cast<uint32_t>(r[in.c]);
  r[in.d] = d;
  return pc + 1;
}
// sad: c + |a - b|.
template <class T>
uint32_t h_sad(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a), b = get<T>(r, in.b);
  const U<T> diff =
      a > b ? static_cast<U<T>>(W<T>(a) - W<T>(b)) : static_cast<U<T>>(W<T>(b) - W<T>(a));
  put<T>(r, in.d, static_cast<T>(W<T>(diff) + W<T>(get<T>(r, in.c))));
  return pc + 1;
}
// add.sat.s32 / sub.sat.s32: clamped to the s32 range.
template <bool kSub>
uint32_t h_addsub_sat(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const int64_t a = get<int32_t>(r, in.a), b = get<int32_t>(r, in.b);
  const int64_t v = std::clamp<int64_t>(kSub ? a - b : a + b, INT32_MIN, INT32_MAX);
  put<int32_t>(r, in.d, static_cast<int32_t>(v));
  return pc + 1;
}
// dp4a.atype.btype d, a, b, c: c + the dot product of a's and b's four bytes (signed per type);
// dp2a.lo/hi: a's two 16-bit halves with b's low or high two bytes. aux bit 0: a signed, bit 1:
// b signed, bit 2: dp2a, bit 3: dp2a.hi.
uint32_t h_dp(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t a = static_cast<uint32_t>(r[in.a]), b = static_cast<uint32_t>(r[in.b]);
  const bool as = in.aux & 1, bs = in.aux & 2;
  auto byte = [](uint32_t v, int i, bool sgn) -> int64_t {
    const uint32_t x = (v >> (8 * i)) & 0xff;
    return sgn ? static_cast<int8_t>(x) : static_cast<int64_t>(x);
  };
  auto half = [](uint32_t v, int i, bool sgn) -> int64_t {
    const uint32_t x = (v >> (16 * i)) & 0xffff;
    return sgn ? static_cast<int16_t>(x) : static_cast<int64_t>(x);
  };
  int64_t acc = in.c == kSlotFalse ? 0 : static_cast<int64_t>(static_cast<int32_t>(r[in.c]));
  if (!(as || bs)) acc = static_cast<int64_t>(static_cast<uint32_t>(r[in.c]));
  if (in.aux & 4) {
    const int base = (in.aux & 8) ? 2 : 0;
    for (int i = 0; i < 2; ++i) acc += half(a, i, as) * byte(b, base + i, bs);
  } else {
    for (int i = 0; i < 4; ++i) acc += byte(a, i, as) * byte(b, i, bs);
  }
  r[in.d] = static_cast<uint32_t>(acc);
  return pc + 1;
}

uint32_t h_mov(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  r[in.d] = r[in.a];
  return pc + 1;
}
// mov with a vector: pack {v0, v1, ...} into d, or unpack a into {v0, v1, ...}; aux = lane bits.
uint32_t h_pack(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t bits = in.aux & 0xff, n = in.aux >> 8;
  const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  uint64_t d = 0;
  for (uint32_t i = 0; i < n; ++i) d |= (r[in.v[i]] & mask) << (bits * i);
  r[in.d] = d;
  return pc + 1;
}
uint32_t h_unpack(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t bits = in.aux & 0xff, n = in.aux >> 8;
  const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  const uint64_t a = r[in.a];
  for (uint32_t i = 0; i < n; ++i) r[in.v[i]] = (a >> (bits * i)) & mask;
  r[kSlotSink] = 0;
  return pc + 1;
}
uint32_t h_selp(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  r[in.d] = r[in.c] ? r[in.a] : r[in.b];
  return pc + 1;
}

// setp: aux bits 0-1: bool op (0 none, 1 and, 2 or, 3 xor); bit 2: c negated.
inline bool combine(bool v, const uint64_t* r, const Instr& in) {
  const uint32_t op = in.aux & 3;
  if (op == 0) return v;
  const bool c = (r[in.c] != 0) != ((in.aux & 4) != 0);
  return op == 1 ? (v && c) : op == 2 ? (v || c) : (v != c);
}
inline uint32_t set_preds(uint64_t* r, const Instr& in, bool v, uint32_t pc) {
  const bool p = combine(v, r, in);
  const bool q = combine(!v, r, in);
  r[in.d] = p;
  r[in.e] = q;
  r[kSlotSink] = 0;
  return pc + 1;
}
enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe };
template <class T, Cmp C>
uint32_t h_setp_int(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const T a = get<T>(r, in.a), b = get<T>(r, in.b);
  bool v = false;
  switch (C) {
    case Cmp::kEq:
      v = a == b;
      break;
    case Cmp::kNe:
      v = a != b;
      break;
    case Cmp::kLt:
      v = a < b;
      break;
    case Cmp::kLe:
      v = a <= b;
      break;
    case Cmp::kGt:
      v = a > b;
      break;
    case Cmp::kGe:
      v = a >= b;
      break;
  }
  return set_preds(r, in, v, pc);
}

// cvt between integer types: extend from the source type, truncate to aux bits.
template <class S>
uint32_t h_cvt_int(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(get<S>(r, in.a)));
  const uint64_t ext =
      std::is_signed_v<S> ? v : static_cast<uint64_t>(static_cast<U<S>>(get<S>(r, in.a)));
  r[in.d] = in.aux >= 64 ? ext : (ext & ((1ull << in.aux) - 1));
  return pc + 1;
}
// cvt.sat between integer types: aux = dest bits | (dest signed << 8).
template <class S>
uint32_t h_cvt_int_sat(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t bits = in.aux & 0xff;
  const bool dsigned = (in.aux >> 8) & 1;
  const S v = get<S>(r, in.a);
  __int128 x = v;
  const __int128 lo = dsigned ? -(static_cast<__int128>(1) << (bits - 1)) : 0;
  const __int128 hi = dsigned ? (static_cast<__int128>(1) << (bits - 1)) - 1
                              : (static_cast<__int128>(1) << bits) - 1;
  x = x < lo ? lo : x > hi ? hi : x;
  const uint64_t u = static_cast<uint64_t>(x);
  r[in.d] = bits >= 64 ? u : (u & ((1ull << bits) - 1));
  return pc + 1;
}

template <template <class> class F>
struct ByType {};

// Picks H<T> for an integer PTX type; b-types are unsigned. nullptr for other types.
#define LEAP_INT_DISPATCH(H, t) \
  [&]() -> Handler {            \
    switch (t) {                \
      case Type::kU16:          \
      case Type::kB16:          \
        return &H<uint16_t>;    \
      case Type::kU32:          \
      case Type::kB32:          \
        return &H<uint32_t>;    \
      case Type::kU64:          \
      case Type::kB64:          \
        return &H<uint64_t>;    \
      case Type::kS16:          \
        return &H<int16_t>;     \
      case Type::kS32:          \
        return &H<int32_t>;     \
      case Type::kS64:          \
        return &H<int64_t>;     \
      default:                  \
        return nullptr;         \
    }                           \
  }()

bool is_int(Type t) {
  return t >= Type::kB8 && t <= Type::kS64 && t != Type::kB128;
}

template <Cmp C>
Handler setp_for(Type t) {
  switch (t) {
    case Type::kU16:
    case Type::kB16:
      return &h_setp_int<uint16_t, C>;
    case Type::kU32:
    case Type::kB32:
      return &h_setp_int<uint32_t, C>;
    case Type::kU64:
    case Type::kB64:
      return &h_setp_int<uint64_t, C>;
    case Type::kS16:
      return &h_setp_int<int16_t, C>;
    case Type::kS32:
      return &h_setp_int<int32_t, C>;
    case Type::kS64:
      return &h_setp_int<int64_t, C>;
    case Type::kPred:
      return &h_setp_int<uint8_t, C>;
    default:
      return nullptr;
  }
}

Handler cvt_int_for(Type src, bool sat) {
  switch (src) {
    case Type::kU8:
    case Type::kB8:
      return sat ? &h_cvt_int_sat<uint8_t> : &h_cvt_int<uint8_t>;
    case Type::kS8:
      return sat ? &h_cvt_int_sat<int8_t> : &h_cvt_int<int8_t>;
    case Type::kU16:
    case Type::kB16:
      return sat ? &h_cvt_int_sat<uint16_t> : &h_cvt_int<uint16_t>;
    case Type::kS16:
      return sat ? &h_cvt_int_sat<int16_t> : &h_cvt_int<int16_t>;
    case Type::kU32:
    case Type::kB32:
      return sat ? &h_cvt_int_sat<uint32_t> : &h_cvt_int<uint32_t>;
    case Type::kS32:
      return sat ? &h_cvt_int_sat<int32_t> : &h_cvt_int<int32_t>;
    case Type::kU64:
    case Type::kB64:
      return sat ? &h_cvt_int_sat<uint64_t> : &h_cvt_int<uint64_t>;
    case Type::kS64:
      return sat ? &h_cvt_int_sat<int64_t> : &h_cvt_int<int64_t>;
    default:
      return nullptr;
  }
}

}  // namespace

bool select_int(const OpSpec& op, Selection* sel) {
  const std::string& b = op.base;
  const Type t = op.type(0);
  sel->imm_type = t;
  if (b == "mov") {
    sel->fn = &h_mov;  // vector forms are rewritten to pack/unpack by the decoder
    return true;
  }
  if (b == "selp") {
    sel->fn = &h_selp;
    return true;
  }
  if (t == Type::kPred) {
    if (b == "and") sel->fn = &h_and<uint8_t>;
    if (b == "or") sel->fn = &h_or<uint8_t>;
    if (b == "xor") sel->fn = &h_xor<uint8_t>;
    if (b == "not") sel->fn = &h_not_pred;
    if (sel->fn) return true;
  }
  if (b == "setp" && (is_int(t) || t == Type::kPred)) {
    static const char* const kNames[] = {"eq", "ne", "lt", "le", "gt",
                                         "ge", "lo", "ls", "hi", "hs"};
    static const Cmp kCmps[] = {Cmp::kEq, Cmp::kNe, Cmp::kLt, Cmp::kLe, Cmp::kGt,
                                Cmp::kGe, Cmp::kLt, Cmp::kLe, Cmp::kGt, Cmp::kGe};
    for (size_t i = 0; i < 10; ++i) {
      if (!op.has(kNames[i])) continue;
      Type tt = t;
      if (i >= 6 && is_signed(t)) tt = static_cast<Type>(static_cast<int>(t) - 4);  // s -> u
      switch (kCmps[i]) {
        case Cmp::kEq:
          sel->fn = setp_for<Cmp::kEq>(tt);
          break;
        case Cmp::kNe:
          sel->fn = setp_for<Cmp::kNe>(tt);
          break;
        case Cmp::kLt:
          sel->fn = setp_for<Cmp::kLt>(tt);
          break;
        case Cmp::kLe:
          sel->fn = setp_for<Cmp::kLe>(tt);
          break;
        case Cmp::kGt:
          sel->fn = setp_for<Cmp::kGt>(tt);
          break;
        case Cmp::kGe:
          sel->fn = setp_for<Cmp::kGe>(tt);
          break;
      }
    }
    sel->aux = op.has("and") ? 1 : op.has("or") ? 2 : op.has("xor") ? 3 : 0;
    return true;
  }
  if (b == "cvt" && is_int(op.type(0)) && is_int(op.type(1))) {
    sel->fn = cvt_int_for(op.type(1), op.sat);
    sel->imm_type = op.type(1);
    sel->aux = static_cast<uint32_t>(type_bits(op.type(0))) |
               (op.sat && is_signed(op.type(0)) ? 0x100u : 0u);
    return true;
  }
  if (b == "dp4a" || b == "dp2a") {
    sel->fn = &h_dp;
    sel->imm_type = Type::kU32;
    sel->aux = (is_signed(op.type(0)) ? 1u : 0u) | (is_signed(op.type(1)) ? 2u : 0u) |
               (b == "dp2a" ? 4u : 0u) | (op.has("hi") ? 8u : 0u);
    return true;
  }
  if (!is_int(t)) return false;
  if (op.sat) {  // only add.sat.s32 and sub.sat.s32 exist
    if ((b == "add" || b == "sub") && t == Type::kS32) {
      sel->fn = b == "add" ? &h_addsub_sat<false> : &h_addsub_sat<true>;
    }
    return true;
  }
  if (b == "mul24" || b == "mad24") {
    const bool sgn = is_signed(t);
    if (b == "mul24")
      sel->fn = sgn ? &h_mul24<int32_t, false> : &h_mul24<uint32_t, false>;
    else
      sel->fn = sgn ? &h_mul24<int32_t, true> : &h_mul24<uint32_t, true>;
    sel->aux = op.has("hi") ? 1 : 0;
    return true;
  }
  if (b == "sad") {
    sel->fn = LEAP_INT_DISPATCH(h_sad, t);
    return true;
  }
  const bool cc = op.has("cc");
  if (b == "add" && !cc)
    sel->fn = LEAP_INT_DISPATCH(h_add, t);
  else if (b == "sub" && !cc)
    sel->fn = LEAP_INT_DISPATCH(h_sub, t);
  else if (b == "mul" && op.has("lo"))
    sel->fn = LEAP_INT_DISPATCH(h_mul_lo, t);
  else if (b == "mul" && op.has("hi"))
    sel->fn = LEAP_INT_DISPATCH(h_mul_hi, t);
  else if (b == "mul" && op.has("wide")) {
    switch (t) {
      case Type::kU16:
        sel->fn = &h_mul_wide<uint16_t>;
        break;
      case Type::kS16:
        sel->fn = &h_mul_wide<int16_t>;
        break;
      case Type::kU32:
        sel->fn = &h_mul_wide<uint32_t>;
        break;
      case Type::kS32:
        sel->fn = &h_mul_wide<int32_t>;
        break;
      default:
        break;
    }
  } else if ((b == "mad" || b == "madc") && (cc || b == "madc")) {
    const bool hi = op.has("hi");
    const bool in_c = b == "madc";
    const bool is64 = type_bits(t) == 64;
    const bool sgn = is_signed(t);
#define LEAP_MADC(T)                                                                            \
  (hi ? (in_c ? (cc ? &h_mad_carry<T, true, true, true> : &h_mad_carry<T, true, true, false>)   \
              : &h_mad_carry<T, true, false, true>)                                             \
      : (in_c ? (cc ? &h_mad_carry<T, false, true, true> : &h_mad_carry<T, false, true, false>) \
              : &h_mad_carry<T, false, false, true>))
    sel->fn = is64 ? (sgn ? LEAP_MADC(int64_t) : LEAP_MADC(uint64_t))
                   : (sgn ? LEAP_MADC(int32_t) : LEAP_MADC(uint32_t));
#undef LEAP_MADC
  } else if (b == "mad" && op.has("lo"))
    sel->fn = LEAP_INT_DISPATCH(h_mad_lo, t);
  else if (b == "mad" && op.has("hi"))
    sel->fn = LEAP_INT_DISPATCH(h_mad_hi, t);
  else if (b == "mad" && op.has("wide")) {
    switch (t) {
      case Type::kU16:
        sel->fn = &h_mad_wide<uint16_t>;
        break;
      case Type::kS16:
        sel->fn = &h_mad_wide<int16_t>;
        break;
      case Type::kU32:
        sel->fn = &h_mad_wide<uint32_t>;
        break;
      case Type::kS32:
        sel->fn = &h_mad_wide<int32_t>;
        break;
      default:
        break;
    }
  } else if (b == "add" || b == "sub" || b == "addc" || b == "subc") {
    const bool sub = b[0] == 's';
    const bool in_c = b.size() == 4;
    const bool is64 = type_bits(t) == 64;
#define LEAP_CARRY(T)                                                                    \
  (sub ? (in_c ? (cc ? &h_carry<T, true, true, true> : &h_carry<T, true, false, true>)   \
               : &h_carry<T, false, true, true>)                                         \
       : (in_c ? (cc ? &h_carry<T, true, true, false> : &h_carry<T, true, false, false>) \
               : &h_carry<T, false, true, false>))
    sel->fn = is64 ? LEAP_CARRY(uint64_t) : LEAP_CARRY(uint32_t);
#undef LEAP_CARRY
  } else if (b == "div")
    sel->fn = LEAP_INT_DISPATCH(h_div, t);
  else if (b == "rem")
    sel->fn = LEAP_INT_DISPATCH(h_rem, t);
  else if (b == "min")
    sel->fn = LEAP_INT_DISPATCH(h_min, t);
  else if (b == "max")
    sel->fn = LEAP_INT_DISPATCH(h_max, t);
  else if (b == "abs")
    sel->fn = LEAP_INT_DISPATCH(h_abs, t);
  else if (b == "neg")
    sel->fn = LEAP_INT_DISPATCH(h_neg, t);
  else if (b == "and")
    sel->fn = LEAP_INT_DISPATCH(h_and, t);
  else if (b == "or")
    sel->fn = LEAP_INT_DISPATCH(h_or, t);
  else if (b == "xor")
    sel->fn = LEAP_INT_DISPATCH(h_xor, t);
  else if (b == "not")
    sel->fn = LEAP_INT_DISPATCH(h_not, t);
  else if (b == "cnot")
    sel->fn = LEAP_INT_DISPATCH(h_cnot, t);
  else if (b == "shl")
    sel->fn = LEAP_INT_DISPATCH(h_shl, t);
  else if (b == "shr")
    sel->fn = LEAP_INT_DISPATCH(h_shr, t);
  else if (b == "popc")
    sel->fn = LEAP_INT_DISPATCH(h_popc, t);
  else if (b == "clz")
    sel->fn = LEAP_INT_DISPATCH(h_clz, t);
  else if (b == "brev")
    sel->fn = LEAP_INT_DISPATCH(h_brev, t);
  else if (b == "bfind") {
    sel->fn = LEAP_INT_DISPATCH(h_bfind, t);
    sel->aux = op.has("shiftamt") ? 1 : 0;
  } else if (b == "bfe")
    sel->fn = LEAP_INT_DISPATCH(h_bfe, t);
  else if (b == "bfi")
    sel->fn = LEAP_INT_DISPATCH(h_bfi, t);
  else if (b == "prmt" && t == Type::kB32 && op.mods.empty())
    sel->fn = &h_prmt;
  else if (b == "prmt" && t == Type::kB32 && op.mods.size() == 1) {
    static const char* const kModes[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
    for (uint32_t i = 0; i < 6; ++i) {
      if (op.has(kModes[i])) {
        sel->fn = &h_prmt_mode;
        sel->aux = i + 1;
      }
    }
  } else if (b == "lop3" && t == Type::kB32)
    sel->fn = &h_lop3;
  else if (b == "shf" && t == Type::kB32) {
    const bool left = op.has("l");
    const bool wrap = op.has("wrap");
    sel->fn = left ? (wrap ? &h_shf<true, true> : &h_shf<true, false>)
                   : (wrap ? &h_shf<false, true> : &h_shf<false, false>);
  } else {
    return false;
  }
  if (b == "shl" || b == "shr" || b == "bfe" || b == "bfi" || b == "shf") {
    sel->imm_type = Type::kU32;  // shift amounts and bit positions are u32 whatever the type
  }
  return true;
}

// Exposed to the decoder for vector mov.
Handler pack_handler() {
  return &h_pack;
}
Handler unpack_handler() {
  return &h_unpack;
}

}  // namespace leap::sandbox::ptx
