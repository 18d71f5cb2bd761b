// GlobalMemory's state, shared with the executor (which builds its region table from it).
// Invariant: allocations are keyed by their device address and never overlap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "sandbox/ptx/interpreter.h"

namespace leap::sandbox::ptx {

struct GlobalMemory::Impl {
  struct Allocation {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };
  std::map<uint64_t, Allocation> allocations;
  uint64_t next = 0;
};

}  // namespace leap::sandbox::ptx
