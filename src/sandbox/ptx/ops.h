// The opcode catalogue: a parsed opcode (OpSpec) is matched to a handler, and the decoder is
// told how the instruction's operands bind to Instr fields (its Shape). Internal.
//
// Invariants: select_handler() returns nullptr only for instructions the interpreter does not
// implement, and the decoder then reports kUnsupported naming the opcode; each handler family
// lives in its own file (ops_int, ops_float, ops_memory, ops_control).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sandbox/ptx/float_formats.h"
#include "sandbox/ptx/program.h"

namespace leap::sandbox::ptx {

enum class Type : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kB128,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
};
Type parse_type(std::string_view s);  // ".f32" -> kF32; kNone if not a type
int type_bits(Type t);
inline bool is_signed(Type t) {
  return t >= Type::kS8 && t <= Type::kS64;
}
inline bool is_float(Type t) {
  return t >= Type::kF16;
}

// How operands bind to Instr fields.
enum class Shape : uint8_t {
  kAlu,        // d, a, b, c, ... (a pair dest `p|q` binds d and e; sources follow)
  kLoad,       // d or {v...}, [a+off]
  kStore,      // [a+off], b or {v...}
  kAtom,       // d, [a+off], b, c
  kRed,        // [a+off], b
  kBranch,     // label -> aux
  kCall,       // call sites -> aux
  kNone,       // no operands used (ret, exit, membar)
  kBarrier,    // a = id, b = count (optional)
  kCopyAsync,  // [a+off] (shared dst), [b+imm] (global src), size in aux
  kShfl,       // d|e, a, b, c, mask in v[0]
  kVote,       // d, a (pred), mask in b
};

struct OpSpec {
  std::string base;               // "add", "ld", "setp", ...
  std::vector<std::string> mods;  // every other dotted part, in order (without types)
  std::vector<Type> types;        // the type parts, in order
  Space space = Space::kGeneric;
  bool has_space = false;
  uint32_t vec = 1;
  Round round = Round::kRn;
  bool has_round = false;
  bool int_round = false;  // rni/rzi/rmi/rpi
  bool ftz = false;
  bool sat = false;

  bool has(std::string_view m) const;
  Type type(size_t i = 0) const { return i < types.size() ? types[i] : Type::kNone; }
};
OpSpec parse_opcode(std::string_view opcode);

struct Selection {
  Handler fn = nullptr;
  Shape shape = Shape::kAlu;
  uint32_t aux = 0;
  Type imm_type = Type::kNone;  // the type immediates of this instruction are encoded in
};

// Each returns true when it recognised the opcode; sel->fn stays nullptr when that variant is
// not implemented (the decoder then reports kUnsupported naming the instruction).
bool select_int(const OpSpec& op, Selection* sel);
bool select_float(const OpSpec& op, Selection* sel);
bool select_memory(const OpSpec& op, Selection* sel);
bool select_control(const OpSpec& op, Selection* sel);

// Handlers the decoder needs by form rather than by opcode.
Handler pack_handler();    // mov d, {a, b, ...}
Handler unpack_handler();  // mov {a, b, ...}, s
Handler load_handler(Space s, Type t, uint32_t vec);
Handler store_handler(Space s, Type t, uint32_t vec);

}  // namespace leap::sandbox::ptx
