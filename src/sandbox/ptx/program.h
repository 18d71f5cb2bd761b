// The decoded form of a PTX module that the executor runs: flat instruction arrays with operand
// slot indices, no strings on the hot path. Internal to the interpreter (not a contract).
//
// Invariants:
//  - every operand is a slot index into the thread's register file (uint64_t per slot); a slot
//    holds its value zero-extended from the register's width (predicates are 0 or 1);
//  - immediates, symbol addresses and special registers are slots too, filled when a thread
//    starts from a per-launch template, so handlers never test an operand's kind;
//  - slot 0 always holds 1 (the guard of unguarded instructions), slot 1 always holds 0, and
//    slot 2 is a sink for `_` operands;
//  - addresses in a state space are offsets in it (shared, local, kernel params); generic
//    addresses put shared, local and kernel params in windows far above any global allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/ptx/interpreter.h"

namespace leap::sandbox::ptx {

struct Exec;
struct Instr;

// Runs one instruction of the current thread; returns the next pc, or kStop when the thread
// must stop (barrier, warp collective, exit, fault: the handler has set the thread's state).
using Handler = uint32_t (*)(Exec& x, uint64_t* r, const Instr& in, uint32_t pc);
inline constexpr uint32_t kStop = 0xFFFFFFFFu;

inline constexpr uint32_t kSlotTrue = 0;
inline constexpr uint32_t kSlotFalse = 1;
inline constexpr uint32_t kSlotSink = 2;
inline constexpr uint32_t kSlotCarry = 3;  // the carry flag of add.cc/addc and friends
inline constexpr uint32_t kFirstFreeSlot = 4;

// Generic-address windows (64-bit). Global allocations live far below them.
inline constexpr uint64_t kSharedWindow = 0x00007F0000000000ull;
inline constexpr uint64_t kLocalWindow = 0x00007E0000000000ull;
inline constexpr uint64_t kParamWindow = 0x00007D0000000000ull;
inline constexpr uint64_t kWindowSize = 0x0000000100000000ull;
// Module-scope .global and .const variables get global addresses from here.
inline constexpr uint64_t kModuleGlobalBase = 0x0000600000000000ull;

enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kParam, kConst };

struct Instr {
  Handler fn = nullptr;
  uint32_t d = kSlotSink, a = kSlotFalse, b = kSlotFalse, c = kSlotFalse, e = kSlotFalse;
  uint32_t guard = kSlotTrue;
  uint32_t gneg = 0;  // 1: the guard is negated (@!%p)
  uint32_t aux = 0;   // branch target, call index, vector length, immLut, ...
  int64_t off = 0;    // address offset
  uint32_t v[4] = {kSlotSink, kSlotSink, kSlotSink, kSlotSink};  // vector operands
  uint32_t text = 0;  // index of the instruction's source text, for messages
};

// A by-value copy done by `call`: bytes of per-thread local memory (param areas).
struct ParamCopy {
  uint32_t from = 0, to = 0, size = 0;
};
struct CallSite {
  uint32_t target_pc = 0;
  std::vector<ParamCopy> args;     // before the jump
  std::vector<ParamCopy> results;  // after the callee returns
  int extern_kind = 0;             // 0: a .func in the module; 1: vprintf; 2: __assertfail
};

struct Symbol {
  Space space = Space::kGlobal;
  uint64_t offset = 0;  // shared/local/param: offset in the space; global/const: in module data
  uint64_t size = 0;
};

struct KernelCode {
  KernelInfo info;
  uint32_t entry_pc = 0;
  size_t param_bytes = 0;
  std::vector<size_t> param_offsets;
  size_t shared_static_bytes = 0;  // the module-wide static shared layout the kernel runs with
};

// Slots whose value is known only at launch or per thread.
enum class SpecialReg : uint8_t {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneId,
  kWarpId,
  kNwarpId,
  kLanemaskEq,
  kLanemaskLt,
  kLanemaskLe,
  kLanemaskGt,
  kLanemaskGe,
  kClock,
  kClock64,
  kSmId,
  kNsmId,
  kGridId,
  kDynamicSmemSize,
  kTotalSmemSize,
};
struct SpecialSlot {
  uint32_t slot;
  SpecialReg reg;
};

struct Program {
  std::vector<Instr> code;
  std::vector<std::string> texts;  // source text of each instruction, for messages
  std::vector<CallSite> calls;
  std::vector<KernelCode> kernels;
  std::vector<KernelInfo> kernel_infos;  // the same infos, in the public form
  uint32_t slot_count = kFirstFreeSlot;
  std::vector<uint64_t> slot_init;  // the register-file template (constants)
  std::vector<SpecialSlot> special_slots;
  // Initial image of module .global variables, then .const ones from module_const_begin (read
  // only), at global address kModuleGlobalBase. Each launch starts from a fresh copy.
  std::vector<uint8_t> module_data;
  size_t module_const_begin = 0;
  size_t shared_static_bytes = 0;
  size_t local_bytes = 0;  // per thread: local depots and call param areas
  size_t max_call_depth = 0;
};

}  // namespace leap::sandbox::ptx
