// The PTX interpreter: runs NVRTC's PTX on the CPU, so that kernels can be verified on machines
// without a GPU (docs/design.md, Verification). This header is the contract between the interpreter
// and its callers (the CPU executor of the sandbox, and the tests of the CUDA backend's kernels).
//
// Promises:
//  - every memory access is checked against its allocation (global, shared, local, param);
//    an access outside gives kMemoryViolation naming the instruction and the address;
//  - instructions are counted against a budget: a runaway kernel is a deterministic kTimeout;
//  - an instruction or directive it does not implement gives kUnsupported naming it;
//  - a missing __syncthreads() cannot pass by luck of the schedule: the threads of a block run
//    in more than one order, or shared-memory races are detected directly (kRuntimeError).
//
// How it behaves (docs/ptx_interpreter.md has the details):
//  - results are deterministic: the same module, arguments and options give the same outputs,
//    instruction count and message;
//  - with check_schedules, reads of shared memory written by another thread since the last
//    barrier (and writes over another thread's unordered read) are races, and odd blocks run
//    their warps and lanes in reverse order;
//  - shared memory starts each block filled with 0xFF bytes (NaN as f32), as leftovers would;
//  - a module's .global/.const variables persist across its launches, as on a GPU; launches of
//    one Module must therefore not run concurrently (different Modules may).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace leap::sandbox::ptx {

// One kernel parameter, as declared in the PTX entry: `.param .u64 p0`, `.param .f32 p1`,
// `.param .align 8 .b8 p2[16]` (structs). Callers marshal their arguments from this.
struct ParamInfo {
  std::string name;
  std::string type;  // ".u64", ".s32", ".f32", ".f64", ".b8" (for byte arrays), ...
  size_t size = 0;   // bytes
  size_t align = 0;  // bytes
};

struct KernelInfo {
  std::string name;  // the mangled entry name
  std::vector<ParamInfo> params;
  size_t static_shared_bytes = 0;
};

// A parsed PTX module. Parsing fails (kUnsupported) on directives or instructions the
// interpreter does not implement, naming the first one.
class Module {
 public:
  static Expected<Module> parse(std::string_view ptx_text);
  ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;

  const std::vector<KernelInfo>& kernels() const;
  const KernelInfo* find_kernel(std::string_view name) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Module();
  std::unique_ptr<Impl> impl_;
};

// Device global memory of the interpreter: allocations at fake device addresses, separated by
// unmapped gaps so that a small overrun lands in no allocation and is caught. Addresses restart
// from the same base whenever nothing is allocated, so they are reproducible per trial.
class GlobalMemory {
 public:
  GlobalMemory();
  ~GlobalMemory();
  GlobalMemory(const GlobalMemory&) = delete;
  GlobalMemory& operator=(const GlobalMemory&) = delete;

  uint64_t allocate(size_t bytes);           // zero-filled; returns its device address
  void release(uint64_t address);
  uint8_t* host_pointer(uint64_t address);   // the allocation's bytes, for filling and reading
  // Bytes from `address` to the end of the allocation it is in (the whole allocation at its
  // base; a guarded buffer's body inside it); 0 when it is in none.
  size_t size_of(uint64_t address) const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};

struct RunOptions {
  uint64_t instruction_budget = 2'000'000'000;  // thread-instructions over the whole launch
  bool check_schedules = true;  // run blocks in a second thread order to expose missing barriers
};

enum class RunOutcome { kOk, kMemoryViolation, kTimeout, kUnsupported, kRuntimeError };
const char* outcome_name(RunOutcome o);

struct RunResult {
  RunOutcome outcome = RunOutcome::kOk;
  std::string message;        // what went wrong, naming the instruction and address
  uint64_t instructions = 0;  // thread-instructions executed
};

// Runs one kernel launch. `args` holds one byte string per kernel parameter, laid out as
// ParamInfo says (pointers are GlobalMemory addresses, 8 bytes).
RunResult launch(const Module& module, std::string_view kernel, const LaunchDims& dims,
                 const std::vector<std::vector<uint8_t>>& args, GlobalMemory& memory,
                 const RunOptions& options = {});

}  // namespace leap::sandbox::ptx
