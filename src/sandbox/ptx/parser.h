// PTX text to a syntax tree: module variables, functions (entries and .func), and for each body
// its statements (declarations, labels, instructions, nested scopes). Only syntax is checked
// here; meaning (types, operands, what is implemented) is the decoder's job.
//
// Invariants: every statement keeps its source line and text, so later errors can name the
// instruction; a syntax error is a Status naming the line, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace leap::sandbox::ptx {

struct Operand {
  enum class Kind { kName, kInt, kF32, kF64, kAddress, kVector, kPair, kList };
  Kind kind = Kind::kName;
  std::string name;      // a register, symbol or label (kName); the base of kAddress ("" = none)
  int64_t offset = 0;    // kName: `sym+4`; kAddress: `[base+offset]`
  uint64_t bits = 0;     // kInt (two's complement), kF32/kF64 (raw IEEE bits)
  bool negated = false;  // `!%p`
  std::vector<Operand> elems;  // kVector `{a, b}`, kPair `a|b`, kList `(a, b)`
};

struct VarDecl {
  std::string space;   // ".reg", ".shared", ".local", ".param", ".global", ".const"
  std::string type;    // ".b32", ".f32", ".pred", ...
  uint32_t align = 0;  // 0: natural
  std::string name;
  int64_t range = -1;      // `%r<117>`: 117 registers %r0..%r116; -1: a single name
  int64_t array_len = -1;  // `name[24]`: 24; `name[]`: 0; -1: not an array
  bool is_extern = false;
  std::vector<Operand> init;  // `= {1, 2, 3}` or `= 5`
  int line = 0;
};

struct Statement {
  enum class Kind { kInstruction, kLabel, kDecl, kScopeOpen, kScopeClose };
  Kind kind = Kind::kInstruction;
  int line = 0;
  std::string text;   // the instruction as written (whitespace collapsed), for messages
  std::string guard;  // "%p1" or ""
  bool guard_negated = false;
  std::string opcode;  // "ld.global.v4.f32"; the label name for kLabel
  std::vector<Operand> operands;
  VarDecl decl;
};

struct Function {
  std::string name;
  bool is_entry = false;
  bool has_body = false;
  std::vector<VarDecl> params;
  std::vector<VarDecl> returns;
  std::vector<Statement> body;
  int line = 0;
};

struct ParsedModule {
  std::vector<VarDecl> variables;  // module-scope .global/.shared/.const
  std::vector<Function> functions;
};

Expected<ParsedModule> parse_ptx(std::string_view text);

}  // namespace leap::sandbox::ptx
