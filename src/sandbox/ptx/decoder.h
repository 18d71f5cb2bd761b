// Syntax tree to Program: lays out memory (module variables, static and dynamic shared, the
// per-thread local frames and call parameter areas, kernel parameter buffers), gives every
// register, immediate and special register a slot, picks each instruction's handler and binds
// its operands. Internal to the interpreter.
//
// Invariants: every instruction either decodes to a handler or the module fails with
// kUnsupported naming it (never at run time for something known at parse time); recursion is
// rejected here, so per-thread frames can be laid out statically.
#pragma once

#include <string_view>

#include "common/status.h"
#include "sandbox/ptx/parser.h"
#include "sandbox/ptx/program.h"

namespace leap::sandbox::ptx {

Expected<Program> decode_module(const ParsedModule& parsed);

// True when the interpreter has a handler for this opcode ("ld.global.v4.f32"), as far as the
// opcode alone decides (for coverage reports; operand forms are checked when decoding).
bool opcode_supported(std::string_view opcode);

}  // namespace leap::sandbox::ptx
