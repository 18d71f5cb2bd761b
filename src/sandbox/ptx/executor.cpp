// The executor: runs a kernel launch block by block. Within a block each thread runs on its own
// until it reaches a barrier, a warp collective or its exit; a warp collective completes once
// every lane of the warp that can still arrive is parked, and a barrier once every live thread
// of the block waits at one. So warp collectives see the right lane values, and barriers order
// memory exactly as __syncthreads() does.
//
// Invariants:
//  - deterministic: the same module, arguments and options give the same result, the same
//    instruction count and (on a fault) the same message;
//  - the instruction budget covers the whole launch; reaching it is kTimeout;
//  - with check_schedules, shared-memory races between barriers are detected (kRuntimeError),
//    and odd blocks run their warps and lanes in reverse order, so a kernel that depends on the
//    order of unsynchronised threads differs between blocks;
//  - shared memory starts each block filled with 0xFF bytes (NaN as floats), as it starts with
//    leftovers on a GPU: a kernel that reads shared memory it never wrote gets garbage.
#include <algorithm>
#include <cstdio>

#include "sandbox/ptx/collectives.h"
#include "sandbox/ptx/decoder.h"
#include "sandbox/ptx/exec_state.h"
#include "sandbox/ptx/global_memory_impl.h"
#include "sandbox/ptx/parser.h"

namespace leap::sandbox::ptx {

struct Module::Impl {
  Program program;
  // The module's .global/.const variables: created from the program's image when the module is
  // parsed and kept across launches, as a loaded module's are on a GPU. Launches of one Module
  // must therefore not run concurrently (the executors run them one after another).
  mutable std::vector<uint8_t> variables;
};

Module::Module() : impl_(std::make_unique<Impl>()) {}
Module::~Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;

Expected<Module> Module::parse(std::string_view ptx_text) {
  auto parsed = parse_ptx(ptx_text);
  if (!parsed) return parsed.status();
  auto program = decode_module(*parsed);
  if (!program) return program.status();
  Module m;
  m.impl_->program = std::move(*program);
  m.impl_->variables = m.impl_->program.module_data;
  return m;
}

const std::vector<KernelInfo>& Module::kernels() const {
  return impl_->program.kernel_infos;
}

const KernelInfo* Module::find_kernel(std::string_view name) const {
  for (const KernelInfo& k : impl_->program.kernel_infos) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const char* outcome_name(RunOutcome o) {
  switch (o) {
    case RunOutcome::kOk:
      return "OK";
    case RunOutcome::kMemoryViolation:
      return "MEMORY_VIOLATION";
    case RunOutcome::kTimeout:
      return "TIMEOUT";
    case RunOutcome::kUnsupported:
      return "UNSUPPORTED";
    case RunOutcome::kRuntimeError:
      return "RUNTIME_ERROR";
  }
  return "?";
}

// ---- Exec's cold paths ------------------------------------------------------------------------

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
const char* space_name(Space s) {
  switch (s) {
    case Space::kGeneric:
      return "generic";
    case Space::kGlobal:
      return "global";
    case Space::kShared:
      return "shared";
    case Space::kLocal:
      return "local";
    case Space::kParam:
      return "param";
    case Space::kConst:
      return "const";
  }
  return "?";
}

}  // namespace

std::string Exec::where() const {
  const uint32_t bx = dims.block[0], by = dims.block[1];
  const uint32_t tx = cur % bx, ty = (cur / bx) % by, tz = cur / (bx * by);
  return "block (" + std::to_string(block_id[0]) + "," + std::to_string(block_id[1]) + "," +
         std::to_string(block_id[2]) + ") thread (" + std::to_string(tx) + "," +
         std::to_string(ty) + "," + std::to_string(tz) + ")";
}

uint32_t Exec::fail(RunOutcome o, std::string msg) {
  if (outcome == RunOutcome::kOk) {
    outcome = o;
    message = std::move(msg);
  }
  return kStop;
}

uint8_t* Exec::fault_access(Space s, uint64_t addr, uint32_t size, bool write, const Instr& in,
                            const char* why) {
  std::string msg = std::string(why) + " " + space_name(s) + (write ? " write" : " read") + " of " +
                    std::to_string(size) + " bytes at address " + hex(addr);
  if (s == Space::kShared) msg += " (shared memory is " + std::to_string(shared.size()) + " bytes)";
  if (s == Space::kLocal) msg += " (local memory is " + std::to_string(local_bytes) + " bytes)";
  msg += " by " + text_of(in) + " in " + where();
  fail(RunOutcome::kMemoryViolation, std::move(msg));
  return nullptr;
}

uint8_t* Exec::global_lookup(uint64_t addr, uint32_t size, bool write, const Instr& in) {
  auto it = std::upper_bound(regions.begin(), regions.end(), addr,
                             [](uint64_t a, const Region& r) { return a < r.begin; });
  if (it != regions.begin()) {
    const Region& r = *(it - 1);
    const uint64_t off = addr - r.begin;
    if (off < r.end - r.begin && size <= r.end - r.begin - off) {
      if (write && !r.writable) {
        return fault_access(Space::kGlobal, addr, size, write, in, "write to read-only memory:");
      }
      last_region = static_cast<size_t>(it - 1 - regions.begin());
      return r.data + (addr - r.begin);
    }
  }
  // Name the nearest allocation, so the feedback says how far off the access was.
  std::string near;
  if (it != regions.begin()) {
    const Region& r = *(it - 1);
    if (addr >= r.end || addr + size > r.end) {
      near = "; " + std::to_string(addr - r.begin) + " bytes into a " +
             std::to_string(r.end - r.begin) + "-byte allocation at " + hex(r.begin) +
             " (past its end)";
    }
  }
  if (near.empty() && it != regions.end()) {
    near = "; " + std::to_string(it->begin - addr) + " bytes before a " +
           std::to_string(it->end - it->begin) + "-byte allocation at " + hex(it->begin);
  }
  std::string msg = std::string("out-of-bounds global ") + (write ? "write" : "read") + " of " +
                    std::to_string(size) + " bytes at address " + hex(addr) + near + ", by " +
                    text_of(in) + " in " + where();
  fail(RunOutcome::kMemoryViolation, std::move(msg));
  return nullptr;
}

uint8_t* Exec::race_found(uint64_t addr, bool write, uint16_t other, uint16_t other_warp,
                          bool other_wrote, const Instr& in) {
  std::string them;
  if (other == kMultipleReaders) {
    them = other_warp == kMixedWarps ? "threads of other warps"
                                     : "other threads of warp " + std::to_string(other_warp);
  } else {
    const uint32_t saved = cur;
    cur = other - 1u;
    them = where();
    cur = saved;
  }
  const bool same_warp = other_warp == cur / 32;
  std::string msg = "shared-memory race at shared address " + hex(addr) + ": " + where() + " " +
                    (write ? "writes" : "reads") + " it with " + text_of(in) + " after " + them +
                    " " + (other_wrote ? "wrote" : "read") + " it with no barrier between " +
                    (same_warp ? "(missing __syncthreads() or __syncwarp()? the threads of a warp "
                                 "do not run in lockstep since Volta, volatile or not)"
                               : "(missing __syncthreads()?)");
  fail(RunOutcome::kRuntimeError, std::move(msg));
  return nullptr;
}

// ---- running --------------------------------------------------------------------------------

namespace {

constexpr size_t kMaxSharedBytes = 227 * 1024;          // sm_80/sm_90 per-block maximum
constexpr size_t kMaxLocalBytesPerThread = 128 * 1024;  // stays far below the host's memory
constexpr uint64_t kMaxRegisterFileBytes = 256ull << 20;

uint64_t special_value(const Exec& x, SpecialReg r, uint32_t t, uint64_t clock) {
  const LaunchDims& d = x.dims;
  const uint32_t lane = t % 32;
  switch (r) {
    case SpecialReg::kTidX:
      return t % d.block[0];
    case SpecialReg::kTidY:
      return (t / d.block[0]) % d.block[1];
    case SpecialReg::kTidZ:
      return t / (d.block[0] * d.block[1]);
    case SpecialReg::kNtidX:
      return d.block[0];
    case SpecialReg::kNtidY:
      return d.block[1];
    case SpecialReg::kNtidZ:
      return d.block[2];
    case SpecialReg::kCtaidX:
      return x.block_id[0];
    case SpecialReg::kCtaidY:
      return x.block_id[1];
    case SpecialReg::kCtaidZ:
      return x.block_id[2];
    case SpecialReg::kNctaidX:
      return d.grid[0];
    case SpecialReg::kNctaidY:
      return d.grid[1];
    case SpecialReg::kNctaidZ:
      return d.grid[2];
    case SpecialReg::kLaneId:
      return lane;
    case SpecialReg::kWarpId:
      return t / 32;
    case SpecialReg::kNwarpId:
      return (x.block_threads + 31) / 32;
    case SpecialReg::kLanemaskEq:
      return 1u << lane;
    case SpecialReg::kLanemaskLt:
      return (1u << lane) - 1;
    case SpecialReg::kLanemaskLe:
      return static_cast<uint32_t>((2ull << lane) - 1);
    case SpecialReg::kLanemaskGt:
      return ~static_cast<uint32_t>((2ull << lane) - 1);
    case SpecialReg::kLanemaskGe:
      return ~((1u << lane) - 1);
    case SpecialReg::kClock:
      return static_cast<uint32_t>(clock);
    case SpecialReg::kClock64:
      return clock;
    case SpecialReg::kSmId:
      return 0;
    case SpecialReg::kNsmId:
      return 1;
    case SpecialReg::kGridId:
      return 0;
    case SpecialReg::kDynamicSmemSize:
      return d.dynamic_shared_bytes;
    case SpecialReg::kTotalSmemSize:
      return x.shared.size();
  }
  return 0;
}

// Runs thread t until it parks, exits, faults or exhausts the budget.
void run_thread(Exec& x, uint32_t t, uint64_t* budget_left) {
  x.cur = t;
  ThreadState& ts = x.threads[t];
  uint64_t* r = x.regs_of(t);
  const Instr* code = x.prog->code.data();
  uint32_t pc = ts.pc;
  uint64_t n = 0;
  const uint64_t limit = *budget_left;
  for (;;) {
    if (n == limit) {
      ts.pc = pc;
      x.fail(RunOutcome::kTimeout, "instruction budget exhausted after " +
                                       std::to_string(x.executed + n) +
                                       " thread-instructions (an infinite loop?), at " +
                                       x.text_of(code[pc]) + " in " + x.where());
      break;
    }
    const Instr& in = code[pc];
    ++n;
    if (!(r[in.guard] ^ in.gneg)) {
      ++pc;
      continue;
    }
    const uint32_t next = in.fn(x, r, in, pc);
    if (next == kStop) {
      ts.pc = pc;
      break;
    }
    pc = next;
  }
  *budget_left -= n;
  x.executed += n;
}

void run_block(Exec& x, bool reversed, uint64_t* budget_left) {
  const Program& p = *x.prog;
  const uint32_t nt = x.block_threads;
  const uint32_t nwarps = (nt + 31) / 32;
  for (uint32_t t = 0; t < nt; ++t) {
    std::memcpy(x.regs_of(t), p.slot_init.data(), p.slot_init.size() * sizeof(uint64_t));
    uint64_t* r = x.regs_of(t);
    for (const SpecialSlot& s : p.special_slots) r[s.slot] = special_value(x, s.reg, t, x.executed);
    x.threads[t] = ThreadState{x.kernel->entry_pc, ThreadStatus::kRunnable, 0};
  }
  std::fill(x.shared.begin(), x.shared.end(), 0xFF);
  std::fill(x.local.begin(), x.local.end(), 0);
  ++x.block_epoch;
  std::fill(x.warp_epoch.begin(), x.warp_epoch.end(), 1);

  std::vector<uint32_t> parked;
  std::vector<std::vector<uint32_t>> groups;
  for (;;) {
    bool progress = false;
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      const uint32_t w = reversed ? nwarps - 1 - wi : wi;
      const uint32_t lo = w * 32, hi = std::min(nt, lo + 32);
      for (;;) {
        for (uint32_t li = lo; li < hi; ++li) {
          const uint32_t t = reversed ? hi - 1 - (li - lo) : li;
          if (x.threads[t].status != ThreadStatus::kRunnable) continue;
          run_thread(x, t, budget_left);
          progress = true;
          if (x.failed()) return;
        }
        // Complete the warp's collectives, grouped by instruction, lanes in order.
        parked.clear();
        for (uint32_t t = lo; t < hi; ++t) {
          if (x.threads[t].status == ThreadStatus::kAtWarpOp) parked.push_back(t);
        }
        if (parked.empty()) break;
        // Groups by instruction. A group completes once all live lanes its member masks name
        // have arrived; if none can (lanes wait at different collectives, which the hardware
        // does not define), each completes with the lanes it has, so the kernel still ends.
        uint32_t alive = 0;
        for (uint32_t t = lo; t < hi; ++t) {
          if (x.threads[t].status != ThreadStatus::kExited) alive |= 1u << (t - lo);
        }
        groups.clear();
        for (uint32_t t : parked) {
          auto g = std::find_if(groups.begin(), groups.end(), [&](const std::vector<uint32_t>& v) {
            return x.threads[v[0]].pc == x.threads[t].pc;
          });
          if (g == groups.end()) {
            groups.push_back({t});
          } else {
            g->push_back(t);
          }
        }
        bool completed = false;
        for (const auto& g : groups) {
          if (warp_op_ready(x, g, alive)) {
            complete_warp_op(x, g);
            completed = true;
          }
        }
        if (!completed) {
          for (const auto& g : groups) complete_warp_op(x, g);
        }
        ++x.warp_epoch[w];
        progress = true;
      }
    }
    uint32_t live = 0, waiting = 0;
    for (uint32_t t = 0; t < nt; ++t) {
      live += x.threads[t].status != ThreadStatus::kExited;
      waiting += x.threads[t].status == ThreadStatus::kAtBarrier;
    }
    if (live == 0) return;
    if (waiting == live) {
      parked.clear();
      for (uint32_t t = 0; t < nt; ++t) {
        if (x.threads[t].status == ThreadStatus::kAtBarrier) parked.push_back(t);
      }
      complete_barrier(x, parked);
      ++x.block_epoch;
      continue;
    }
    if (!progress) {
      x.fail(RunOutcome::kRuntimeError,
             "deadlock: " + std::to_string(waiting) + " of " + std::to_string(live) +
                 " live threads of block (" + std::to_string(x.block_id[0]) + "," +
                 std::to_string(x.block_id[1]) + "," + std::to_string(x.block_id[2]) +
                 ") wait at a barrier the others never reach (a __syncthreads() inside a "
                 "divergent branch?)");
      return;
    }
  }
}

}  // namespace

RunResult launch(const Module& module, std::string_view kernel, const LaunchDims& dims,
                 const std::vector<std::vector<uint8_t>>& args, GlobalMemory& memory,
                 const RunOptions& options) {
  RunResult result;
  const Program& p = module.impl().program;
  const KernelCode* k = nullptr;
  for (const KernelCode& kc : p.kernels) {
    if (kc.info.name == kernel) k = &kc;
  }
  auto error = [&](RunOutcome o, std::string msg) {
    result.outcome = o;
    result.message = std::move(msg);
    return result;
  };
  if (!k) return error(RunOutcome::kRuntimeError, "no kernel named " + std::string(kernel));
  if (args.size() != k->info.params.size()) {
    return error(RunOutcome::kRuntimeError, "kernel " + std::string(kernel) + " takes " +
                                                std::to_string(k->info.params.size()) +
                                                " arguments, " + std::to_string(args.size()) +
                                                " given");
  }
  const uint64_t threads = static_cast<uint64_t>(dims.block[0]) * dims.block[1] * dims.block[2];
  if (threads == 0 || threads > 1024 || dims.grid[0] == 0 || dims.grid[1] == 0 ||
      dims.grid[2] == 0) {
    return error(RunOutcome::kRuntimeError,
                 "invalid launch dimensions (block of " + std::to_string(threads) + " threads)");
  }

  Exec x;
  x.prog = &p;
  x.kernel = k;
  x.dims = dims;
  x.block_threads = static_cast<uint32_t>(threads);
  x.slots = p.slot_count;
  x.params.assign(std::max<size_t>(k->param_bytes, 1), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].size() != k->info.params[i].size) {
      return error(RunOutcome::kRuntimeError,
                   "argument " + std::to_string(i) + " of " + std::string(kernel) + " has " +
                       std::to_string(args[i].size()) + " bytes; the kernel's parameter " +
                       k->info.params[i].name + " has " + std::to_string(k->info.params[i].size));
    }
    std::memcpy(x.params.data() + k->param_offsets[i], args[i].data(), args[i].size());
  }
  std::vector<uint8_t>& module_data = module.impl().variables;
  for (auto& [addr, alloc] : memory.impl().allocations) {
    x.regions.push_back(Region{addr, addr + alloc.size, alloc.data.get(), true});
  }
  if (!module_data.empty()) {
    x.regions.push_back(Region{kModuleGlobalBase, kModuleGlobalBase + p.module_const_begin,
                               module_data.data(), true});
    x.regions.push_back(Region{kModuleGlobalBase + p.module_const_begin,
                               kModuleGlobalBase + module_data.size(),
                               module_data.data() + p.module_const_begin, false});
  }
  std::sort(x.regions.begin(), x.regions.end(),
            [](const Region& a, const Region& b) { return a.begin < b.begin; });
  if (x.regions.empty()) x.regions.push_back(Region{});
  // The hardware's limits bound what one launch may ask of the host too.
  const size_t shared_bytes = k->shared_static_bytes + dims.dynamic_shared_bytes;
  if (shared_bytes > kMaxSharedBytes) {
    return error(RunOutcome::kRuntimeError, "the launch needs " + std::to_string(shared_bytes) +
                                                " bytes of shared memory per block; the limit is " +
                                                std::to_string(kMaxSharedBytes));
  }
  if (p.local_bytes > kMaxLocalBytesPerThread) {
    return error(RunOutcome::kRuntimeError, "the kernel needs " + std::to_string(p.local_bytes) +
                                                " bytes of local memory per thread; the limit is " +
                                                std::to_string(kMaxLocalBytesPerThread));
  }
  if (static_cast<uint64_t>(p.slot_count) * threads * sizeof(uint64_t) > kMaxRegisterFileBytes) {
    return error(RunOutcome::kRuntimeError, "the kernel's " + std::to_string(p.slot_count) +
                                                " registers per thread are too many to interpret");
  }
  x.shared.assign(shared_bytes, 0);
  x.local_bytes = p.local_bytes;
  x.local.assign(x.local_bytes * threads, 0);
  x.regs.assign(static_cast<size_t>(threads) * x.slots, 0);
  x.threads.assign(threads, ThreadState{});
  x.call_stack.assign(threads * std::max<size_t>(p.max_call_depth, 1), 0);
  x.return_pc.assign(x.call_stack.size(), 0);
  x.race_check = options.check_schedules;
  if (x.race_check) x.race.assign(x.shared.size(), RaceCell{});
  x.warp_epoch.assign((threads + 31) / 32, 1);

  uint64_t budget_left = options.instruction_budget;
  uint64_t block_index = 0;
  // Starting a block costs host time in proportion to its memory (filling shared and local
  // memory, copying register templates), which instructions alone would not bound: a launch of
  // a million one-thread blocks with large shared memory must time out too. So each block is
  // charged one instruction per 64 bytes it initialises.
  const uint64_t block_cost =
      (x.shared.size() + x.local.size() + x.regs.size() * sizeof(uint64_t)) / 64;
  for (uint32_t bz = 0; bz < dims.grid[2] && !x.failed(); ++bz) {
    for (uint32_t by = 0; by < dims.grid[1] && !x.failed(); ++by) {
      for (uint32_t bx = 0; bx < dims.grid[0] && !x.failed(); ++bx) {
        x.block_id[0] = bx;
        x.block_id[1] = by;
        x.block_id[2] = bz;
        if (budget_left < block_cost) {
          x.fail(RunOutcome::kTimeout,
                 "instruction budget exhausted after " + std::to_string(x.executed) +
                     " thread-instructions, starting block (" + std::to_string(bx) + "," +
                     std::to_string(by) + "," + std::to_string(bz) + ")");
          break;
        }
        budget_left -= block_cost;
        run_block(x, options.check_schedules && (block_index++ % 2 == 1), &budget_left);
      }
    }
  }
  result.outcome = x.outcome;
  result.message = std::move(x.message);
  result.instructions = x.executed;
  return result;
}

}  // namespace leap::sandbox::ptx
