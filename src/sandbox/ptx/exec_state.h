// The state of one launch while it runs (internal to the interpreter): register files, thread
// states, memories and the shared-memory race detector, plus the inline helpers every handler
// uses to read and write slots and to resolve checked addresses.
//
// Invariants:
//  - handlers touch memory only through resolve(), which checks the access against its
//    allocation and alignment and, on failure, records kMemoryViolation and returns nullptr;
//  - a handler that stops its thread (fault, barrier, collective, exit) sets the thread's status
//    (or the launch outcome) before returning kStop;
//  - the race detector sees every non-atomic shared access of the block between barriers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "sandbox/ptx/float_formats.h"
#include "sandbox/ptx/program.h"

namespace leap::sandbox::ptx {

enum class ThreadStatus : uint8_t { kRunnable, kAtBarrier, kAtWarpOp, kExited };

struct ThreadState {
  uint32_t pc = 0;
  ThreadStatus status = ThreadStatus::kRunnable;
  uint32_t depth = 0;  // call depth
};

// One global region the kernel may touch: a GlobalMemory allocation or the module's variables.
struct Region {
  uint64_t begin = 0, end = 0;
  uint8_t* data = nullptr;
  bool writable = true;
};

// Per shared byte: who wrote and read it since the last barrier (thread index + 1; 0 = none).
struct RaceCell {
  uint32_t epoch = 0;
  uint32_t writer_wepoch = 0;
  uint32_t reader_wepoch = 0;
  uint16_t writer = 0;
  uint16_t reader = 0;       // kMultipleReaders when more than one thread read it
  uint16_t reader_warp = 0;  // the readers' warp, or kMixedWarps
};
inline constexpr uint16_t kMultipleReaders = 0xFFFF;
inline constexpr uint16_t kMixedWarps = 0xFFFF;

struct Exec {
  const Program* prog = nullptr;
  const KernelCode* kernel = nullptr;
  LaunchDims dims;
  uint32_t block_threads = 0;
  uint32_t block_id[3] = {0, 0, 0};
  uint32_t slots = 0;

  std::vector<Region> regions;  // sorted by begin
  size_t last_region = 0;
  std::vector<uint8_t> params;
  std::vector<uint8_t> shared;
  std::vector<uint8_t> local;  // block_threads * local_bytes
  size_t local_bytes = 0;

  std::vector<uint64_t> regs;  // block_threads * slots
  std::vector<ThreadState> threads;
  std::vector<uint32_t> call_stack;  // block_threads * max_call_depth: call-site indices
  std::vector<uint32_t> return_pc;   // same shape: where each call returns
  uint32_t cur = 0;                  // the running thread (index in the block)

  bool race_check = false;
  std::vector<RaceCell> race;
  uint32_t block_epoch = 1;
  std::vector<uint32_t> warp_epoch;

  RunOutcome outcome = RunOutcome::kOk;
  std::string message;
  uint64_t executed = 0;

  bool failed() const { return outcome != RunOutcome::kOk; }
  uint64_t* regs_of(uint32_t t) { return regs.data() + static_cast<size_t>(t) * slots; }
  // "block (1,0,0) thread (37,0,0)"
  std::string where() const;
  const std::string& text_of(const Instr& in) const { return prog->texts[in.text]; }

  // Stops the launch with `o`; returns kStop for the handler to return.
  uint32_t fail(RunOutcome o, std::string msg);
  // Cold paths of resolve(): the messages.
  uint8_t* fault_access(Space s, uint64_t addr, uint32_t size, bool write, const Instr& in,
                        const char* why);
  // `other` is a thread index + 1 or kMultipleReaders; `other_warp` its warp or kMixedWarps.
  uint8_t* race_found(uint64_t addr, bool write, uint16_t other, uint16_t other_warp,
                      bool other_wrote, const Instr& in);
  uint8_t* global_lookup(uint64_t addr, uint32_t size, bool write, const Instr& in);

  // Records a shared access for race detection; nullptr (and a failed launch) on a race.
  uint8_t* note_shared(uint64_t addr, uint32_t size, bool write, const Instr& in) {
    const uint16_t me = static_cast<uint16_t>(cur + 1);
    const uint16_t warp = static_cast<uint16_t>(cur / 32);
    const uint32_t we = warp_epoch[warp];
    for (uint32_t i = 0; i < size; ++i) {
      RaceCell& c = race[addr + i];
      if (c.epoch != block_epoch) c = RaceCell{block_epoch, 0, 0, 0, 0, 0};
      // A read of another thread's unordered write. (Two unordered writes are not reported:
      // "every thread sets the flag" is a common, benign pattern; any read of such a location
      // still is.)
      if (!write && c.writer != 0 && c.writer != me &&
          !((c.writer - 1u) / 32 == warp && c.writer_wepoch != we)) {
        return race_found(addr + i, write, c.writer, static_cast<uint16_t>((c.writer - 1u) / 32),
                          true, in);
      }
      if (write) {
        if (c.reader != 0 && c.reader != me && !(c.reader_warp == warp && c.reader_wepoch != we)) {
          return race_found(addr + i, write, c.reader, c.reader_warp, false, in);
        }
        c.writer = me;
        c.writer_wepoch = we;
      } else {
        if (c.reader == 0) {
          c.reader = me;
          c.reader_warp = warp;
        } else if (c.reader != me) {
          c.reader = kMultipleReaders;
          if (c.reader_warp != warp) c.reader_warp = kMixedWarps;
        }
        c.reader_wepoch = we;
      }
    }
    return shared.data() + addr;
  }

  // A checked pointer to `size` bytes at `addr` in space `s`, or nullptr after a fault.
  template <Space S>
  uint8_t* resolve(uint64_t addr, uint32_t size, bool write, const Instr& in, bool atomic = false) {
    if (addr & (size - 1) & 15) return fault_access(S, addr, size, write, in, "misaligned");
    if constexpr (S == Space::kGeneric) {
      if ((addr - kSharedWindow) < kWindowSize) {
        return resolve<Space::kShared>(addr - kSharedWindow, size, write, in, atomic);
      }
      if ((addr - kLocalWindow) < kWindowSize) {
        return resolve<Space::kLocal>(addr - kLocalWindow, size, write, in, atomic);
      }
      if ((addr - kParamWindow) < kWindowSize) {
        return resolve<Space::kParam>(addr - kParamWindow, size, write, in, atomic);
      }
      return resolve<Space::kGlobal>(addr, size, write, in, atomic);
    } else if constexpr (S == Space::kGlobal || S == Space::kConst) {
      const Region& r = regions[last_region];
      const uint64_t off = addr - r.begin;  // wraps for addresses below the region: rejected
      if (off < r.end - r.begin && size <= r.end - r.begin - off && (!write || r.writable)) {
        return r.data + off;
      }
      return global_lookup(addr, size, write, in);
    } else if constexpr (S == Space::kShared) {
      if (addr + size > shared.size() || addr + size < addr) {
        return fault_access(S, addr, size, write, in, "out of bounds");
      }
      if (race_check && !atomic) return note_shared(addr, size, write, in);
      return shared.data() + addr;
    } else if constexpr (S == Space::kLocal) {
      if (addr + size > local_bytes || addr + size < addr) {
        return fault_access(S, addr, size, write, in, "out of bounds");
      }
      return local.data() + static_cast<size_t>(cur) * local_bytes + addr;
    } else {  // kernel parameters: read only
      if (write) return fault_access(S, addr, size, write, in, "read-only");
      if (addr + size > params.size() || addr + size < addr) {
        return fault_access(S, addr, size, write, in, "out of bounds");
      }
      return params.data() + addr;
    }
  }
};

// ---- slot access: a slot holds its value zero-extended from the type's width ----------------
template <class T>
inline T get(const uint64_t* r, uint32_t s) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(static_cast<uint32_t>(r[s]));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(r[s]);
  } else {
    return static_cast<T>(r[s]);
  }
}
template <class T>
inline void put(uint64_t* r, uint32_t s, T v) {
  if constexpr (std::is_same_v<T, float>) {
    r[s] = std::bit_cast<uint32_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    r[s] = std::bit_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    r[s] = v ? 1 : 0;
  } else {
    r[s] = static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  }
}

template <class T>
inline T load_bytes(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void store_bytes(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace leap::sandbox::ptx
