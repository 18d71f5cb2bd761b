// Memory instructions: ld/ldu/st (scalar and v2/v4, every state space), atom/red (add, min,
// max, exch, cas, and, or, xor, inc, dec on the common types, f16/bf16 adds included), cvta,
// cp.async (done at once: a superset of what the asynchronous copy may do), prefetch.
//
// Invariants: every access goes through Exec::resolve, so bounds, alignment, read-only spaces and
// shared-memory races are checked in one place; atomics are not race-checked (they are the
// sanctioned way for threads to share an address between barriers).
#include <cmath>

#include "sandbox/ptx/exec_state.h"
#include "sandbox/ptx/ops.h"

namespace leap::sandbox::ptx {

namespace {

template <int kBytes>
using Bits = std::conditional_t<
    kBytes == 1, uint8_t,
    std::conditional_t<kBytes == 2, uint16_t, std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>;

// aux: vector length in bits 0-3; for signed loads, the register width to sign-extend to in
// bits 8-15.
template <Space S, int kBytes, bool kSigned, int kN>
uint32_t h_ld(Exec& x, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t addr = r[in.a] + static_cast<uint64_t>(in.off);
  const uint8_t* p = x.resolve<S>(addr, kBytes * kN, false, in);
  if (!p) return kStop;
  for (int i = 0; i < kN; ++i) {
    uint64_t v = load_bytes<Bits<kBytes>>(p + i * kBytes);
    if constexpr (kSigned && kBytes < 8) {
      const uint32_t width = (in.aux >> 8) & 0xff;
      const int shift = 64 - 8 * kBytes;
      v = static_cast<uint64_t>(static_cast<int64_t>(v << shift) >> shift);
      if (width < 64) v &= (1ull << width) - 1;
    }
    r[kN == 1 ? in.d : in.v[i]] = v;
  }
  r[kSlotSink] = 0;
  return pc + 1;
}
template <Space S, int kBytes, int kN>
uint32_t h_st(Exec& x, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t addr = r[in.a] + static_cast<uint64_t>(in.off);
  uint8_t* p = x.resolve<S>(addr, kBytes * kN, true, in);
  if (!p) return kStop;
  for (int i = 0; i < kN; ++i) {
    store_bytes<Bits<kBytes>>(p + i * kBytes,
                              static_cast<Bits<kBytes>>(r[kN == 1 ? in.b : in.v[i]]));
  }
  return pc + 1;
}

enum class AOp { kAdd, kMin, kMax, kExch, kCas, kAnd, kOr, kXor, kInc, kDec };
enum class AType { kU32, kS32, kU64, kS64, kF32, kF64, kF16, kBF16, kF16x2, kBF16x2 };

template <AType T>
constexpr int atype_bytes() {
  return (T == AType::kU64 || T == AType::kS64 || T == AType::kF64) ? 8
         : (T == AType::kF16 || T == AType::kBF16)                  ? 2
                                                                    : 4;
}

template <AType T, AOp O>
uint64_t atomic_apply(uint64_t old, uint64_t b, uint64_t c) {
  if constexpr (T == AType::kF32 || T == AType::kF64) {
    using F = std::conditional_t<T == AType::kF32, float, double>;
    using I = std::conditional_t<T == AType::kF32, uint32_t, uint64_t>;
    const F o = std::bit_cast<F>(static_cast<I>(old)), v = std::bit_cast<F>(static_cast<I>(b));
    F d = o;
    if (O == AOp::kAdd) d = o + v;
    if (O == AOp::kMin) d = std::fmin(o, v);
    if (O == AOp::kMax) d = std::fmax(o, v);
    if (O == AOp::kExch) return b;
    if (O == AOp::kCas) return old == b ? c : old;
    return std::bit_cast<I>(d);
  } else if constexpr (T == AType::kF16 || T == AType::kBF16 || T == AType::kF16x2 ||
                       T == AType::kBF16x2) {
    constexpr bool kBf = T == AType::kBF16 || T == AType::kBF16x2;
    constexpr int kLanes = (T == AType::kF16x2 || T == AType::kBF16x2) ? 2 : 1;
    uint64_t d = 0;
    for (int i = 0; i < kLanes; ++i) {
      const uint16_t ho = static_cast<uint16_t>(old >> (16 * i)),
                     hb = static_cast<uint16_t>(b >> (16 * i));
      const double o = kBf ? bf16_to_float(ho) : half_to_float(ho);
      const double v = kBf ? bf16_to_float(hb) : half_to_float(hb);
      double res = o;
      if (O == AOp::kAdd) res = o + v;
      if (O == AOp::kMin) res = std::fmin(o, v);
      if (O == AOp::kMax) res = std::fmax(o, v);
      d |= static_cast<uint64_t>(kBf ? double_to_bf16(res) : double_to_half(res)) << (16 * i);
    }
    if (O == AOp::kExch) return b;
    if (O == AOp::kCas) return old == b ? c : old;
    return d;
  } else {
    using I = std::conditional_t<
        T == AType::kU32, uint32_t,
        std::conditional_t<T == AType::kS32, int32_t,
                           std::conditional_t<T == AType::kU64, uint64_t, int64_t>>>;
    using UI = std::make_unsigned_t<I>;
    const I o = static_cast<I>(old), v = static_cast<I>(b);
    I d = o;
    switch (O) {
      case AOp::kAdd:
        d = static_cast<I>(static_cast<UI>(o) + static_cast<UI>(v));
        break;
      case AOp::kMin:
        d = o < v ? o : v;
        break;
      case AOp::kMax:
        d = o < v ? v : o;
        break;
      case AOp::kExch:
        d = v;
        break;
      case AOp::kCas:
        d = o == v ? static_cast<I>(c) : o;
        break;
      case AOp::kAnd:
        d = o & v;
        break;
      case AOp::kOr:
        d = o | v;
        break;
      case AOp::kXor:
        d = o ^ v;
        break;
      case AOp::kInc:
        d = static_cast<UI>(o) >= static_cast<UI>(v) ? 0 : static_cast<I>(o + 1);
        break;
      case AOp::kDec:
        d = (o == 0 || static_cast<UI>(o) > static_cast<UI>(v)) ? v : static_cast<I>(o - 1);
        break;
    }
    return static_cast<UI>(d);
  }
}

template <Space S, AType T, AOp O, bool kRet>
uint32_t h_atom(Exec& x, uint64_t* r, const Instr& in, uint32_t pc) {
  constexpr int kBytes = atype_bytes<T>();
  const uint64_t addr = r[in.a] + static_cast<uint64_t>(in.off);
  uint8_t* p = x.resolve<S>(addr, kBytes, true, in, true);
  if (!p) return kStop;
  const uint64_t old = load_bytes<Bits<kBytes>>(p);
  const uint64_t neu = atomic_apply<T, O>(old, r[in.b], r[in.c]);
  store_bytes<Bits<kBytes>>(p, static_cast<Bits<kBytes>>(neu));
  if (kRet) r[in.d] = old;
  r[kSlotSink] = 0;
  return pc + 1;
}

// cvta: d = a + off (the window base, or 0), truncated to aux bits.
uint32_t h_cvta(Exec&, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t v = r[in.a] + static_cast<uint64_t>(in.off);
  r[in.d] = in.aux == 32 ? (v & 0xffffffffu) : v;
  return pc + 1;
}

// cp.async [dst], [src], size{, src_size}: dst is shared, src global; v[0] is the source base
// slot and v[1] the source offset (a raw value, not a slot); c the src_size slot, aux the size.
uint32_t h_cp_async(Exec& x, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint32_t size = in.aux;
  const uint32_t src_size = std::min<uint32_t>(size, static_cast<uint32_t>(r[in.c]));
  uint8_t* d = x.resolve<Space::kShared>(r[in.a] + static_cast<uint64_t>(in.off), size, true, in);
  if (!d) return kStop;
  if (src_size > 0) {
    const uint8_t* s = x.resolve<Space::kGlobal>(r[in.v[0]] + in.v[1], size, false, in);
    if (!s) return kStop;
    std::memcpy(d, s, src_size);
  }
  std::memset(d + src_size, 0, size - src_size);
  return pc + 1;
}
uint32_t h_nop(Exec&, uint64_t*, const Instr&, uint32_t pc) {
  return pc + 1;
}

// isspacep.space p, a: whether generic address a lies in that space's window (aux: Space).
uint32_t h_isspacep(Exec& x, uint64_t* r, const Instr& in, uint32_t pc) {
  const uint64_t a = r[in.a];
  const bool shared = (a - kSharedWindow) < kWindowSize;
  const bool local = (a - kLocalWindow) < kWindowSize;
  const bool param = (a - kParamWindow) < kWindowSize;
  bool v = false;
  switch (static_cast<Space>(in.aux)) {
    case Space::kShared:
      v = shared && (a - kSharedWindow) < x.shared.size();
      break;
    case Space::kLocal:
      v = local;
      break;
    case Space::kParam:
      v = param;
      break;
    default:
      v = !shared && !local && !param;
      break;  // global (and const, which lives there)
  }
  r[in.d] = v;
  return pc + 1;
}

template <Space S>
Handler ld_for(int bytes, bool sgn, uint32_t n) {
#define LEAP_LD(B, SG) \
  (n == 1 ? &h_ld<S, B, SG, 1> : n == 2 ? &h_ld<S, B, SG, 2> : &h_ld<S, B, SG, 4>)
  switch (bytes) {
    case 1:
      return sgn ? LEAP_LD(1, true) : LEAP_LD(1, false);
    case 2:
      return sgn ? LEAP_LD(2, true) : LEAP_LD(2, false);
    case 4:
      return sgn ? LEAP_LD(4, true) : LEAP_LD(4, false);
    case 8:
      return LEAP_LD(8, false);
    default:
      return nullptr;
  }
#undef LEAP_LD
}
template <Space S>
Handler st_for(int bytes, uint32_t n) {
#define LEAP_ST(B) (n == 1 ? &h_st<S, B, 1> : n == 2 ? &h_st<S, B, 2> : &h_st<S, B, 4>)
  switch (bytes) {
    case 1:
      return LEAP_ST(1);
    case 2:
      return LEAP_ST(2);
    case 4:
      return LEAP_ST(4);
    case 8:
      return LEAP_ST(8);
    default:
      return nullptr;
  }
#undef LEAP_ST
}

template <Space S, AType T, bool kRet>
Handler atom_op(const OpSpec& op) {
  if (op.has("add")) return &h_atom<S, T, AOp::kAdd, kRet>;
  if (op.has("min")) return &h_atom<S, T, AOp::kMin, kRet>;
  if (op.has("max")) return &h_atom<S, T, AOp::kMax, kRet>;
  if (op.has("exch")) return &h_atom<S, T, AOp::kExch, kRet>;
  if (op.has("cas")) return &h_atom<S, T, AOp::kCas, kRet>;
  if constexpr (T == AType::kU32 || T == AType::kS32 || T == AType::kU64 || T == AType::kS64) {
    if (op.has("and")) return &h_atom<S, T, AOp::kAnd, kRet>;
    if (op.has("or")) return &h_atom<S, T, AOp::kOr, kRet>;
    if (op.has("xor")) return &h_atom<S, T, AOp::kXor, kRet>;
    if (op.has("inc")) return &h_atom<S, T, AOp::kInc, kRet>;
    if (op.has("dec")) return &h_atom<S, T, AOp::kDec, kRet>;
  }
  return nullptr;
}
template <Space S, bool kRet>
Handler atom_for(const OpSpec& op) {
  const bool bitwise =
      op.has("and") || op.has("or") || op.has("xor") || op.has("exch") || op.has("cas");
  switch (op.type(0)) {
    case Type::kU32:
      return atom_op<S, AType::kU32, kRet>(op);
    case Type::kB32:
      return bitwise ? atom_op<S, AType::kU32, kRet>(op) : nullptr;
    case Type::kS32:
      return atom_op<S, AType::kS32, kRet>(op);
    case Type::kU64:
      return atom_op<S, AType::kU64, kRet>(op);
    case Type::kB64:
      return bitwise ? atom_op<S, AType::kU64, kRet>(op) : nullptr;
    case Type::kS64:
      return atom_op<S, AType::kS64, kRet>(op);
    case Type::kF32:
      return atom_op<S, AType::kF32, kRet>(op);
    case Type::kF64:
      return atom_op<S, AType::kF64, kRet>(op);
    case Type::kF16:
      return atom_op<S, AType::kF16, kRet>(op);
    case Type::kBF16:
      return atom_op<S, AType::kBF16, kRet>(op);
    case Type::kF16x2:
      return atom_op<S, AType::kF16x2, kRet>(op);
    case Type::kBF16x2:
      return atom_op<S, AType::kBF16x2, kRet>(op);
    default:
      return nullptr;
  }
}

template <class F>
Handler by_space(Space s, F&& f) {
  switch (s) {
    case Space::kGeneric:
      return f(std::integral_constant<Space, Space::kGeneric>{});
    case Space::kGlobal:
      return f(std::integral_constant<Space, Space::kGlobal>{});
    case Space::kShared:
      return f(std::integral_constant<Space, Space::kShared>{});
    case Space::kLocal:
      return f(std::integral_constant<Space, Space::kLocal>{});
    case Space::kParam:
      return f(std::integral_constant<Space, Space::kParam>{});
    case Space::kConst:
      return f(std::integral_constant<Space, Space::kConst>{});
  }
  return nullptr;
}

}  // namespace

Handler load_handler(Space s, Type t, uint32_t vec) {
  const int bytes = type_bits(t) / 8;
  return by_space(s,
                  [&](auto sp) { return ld_for<decltype(sp)::value>(bytes, is_signed(t), vec); });
}
Handler store_handler(Space s, Type t, uint32_t vec) {
  const int bytes = type_bits(t) / 8;
  return by_space(s, [&](auto sp) { return st_for<decltype(sp)::value>(bytes, vec); });
}

bool select_memory(const OpSpec& op, Selection* sel) {
  const std::string& b = op.base;
  sel->imm_type = op.type(0);
  if (b == "ld" || b == "ldu") {
    sel->shape = Shape::kLoad;
    if (op.type(0) == Type::kB128 || op.vec > 4) return true;
    sel->fn = load_handler(op.space, op.type(0), op.vec);
    sel->aux = op.vec;
    return true;
  }
  if (b == "st") {
    sel->shape = Shape::kStore;
    if (op.type(0) == Type::kB128 || op.vec > 4) return true;
    sel->fn = store_handler(op.space, op.type(0), op.vec);
    sel->aux = op.vec;
    return true;
  }
  if (b == "atom" || b == "red") {
    const bool ret = b == "atom";
    sel->shape = ret ? Shape::kAtom : Shape::kRed;
    if (op.space == Space::kGlobal) {
      sel->fn = ret ? atom_for<Space::kGlobal, true>(op) : atom_for<Space::kGlobal, false>(op);
    } else if (op.space == Space::kShared) {
      sel->fn = ret ? atom_for<Space::kShared, true>(op) : atom_for<Space::kShared, false>(op);
    } else if (op.space == Space::kGeneric) {
      sel->fn = ret ? atom_for<Space::kGeneric, true>(op) : atom_for<Space::kGeneric, false>(op);
    }
    return true;
  }
  if (b == "isspacep") {
    sel->fn = &h_isspacep;
    sel->aux = static_cast<uint32_t>(op.space);
    return op.has_space;
  }
  if (b == "cvta") {
    sel->fn = &h_cvta;
    sel->aux = static_cast<uint32_t>(type_bits(op.type(0)));
    return true;
  }
  if (b == "cp" && op.has("async")) {
    if (op.has("commit_group") || op.has("wait_group") || op.has("wait_all")) {
      sel->fn = &h_nop;
      sel->shape = Shape::kNone;
      return true;
    }
    if (op.has("bulk") || op.has("mbarrier")) return true;
    sel->fn = &h_cp_async;
    sel->shape = Shape::kCopyAsync;
    return true;
  }
  if (b == "prefetch" || b == "prefetchu" || b == "membar" || b == "fence" || b == "nanosleep" ||
      b == "discard" || b == "applypriority" || b == "createpolicy" || b == "pmevent") {
    sel->fn = &h_nop;
    sel->shape = Shape::kNone;
    return b != "createpolicy";  // createpolicy writes a register we do not model
  }
  return false;
}

}  // namespace leap::sandbox::ptx
