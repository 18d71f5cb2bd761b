// GlobalMemory: the interpreter's device memory. Allocations get fake device addresses spaced by
// unmapped gaps, so an overrun of a few elements lands in no allocation and faults.
//
// Invariants: addresses are 256-byte aligned (as cudaMalloc's are); no two allocations are
// closer than kGap bytes; an address is not reused while any allocation is live, so a stale
// pointer cannot silently hit a newer allocation. Once everything is released (the end of a
// trial), addresses start again from kBase: a trial's addresses, which feedback quotes and the
// policy reads in its next prompt, then depend only on the trial, not on which jobs the worker
// ran before. Otherwise the same seed would not give the same run.
#include <map>
#include <memory>

#include "common/check.h"
#include "sandbox/ptx/global_memory_impl.h"

namespace leap::sandbox::ptx {

namespace {
constexpr uint64_t kBase = 0x0000100000000000ull;
constexpr uint64_t kGap = 1ull << 20;
}  // namespace

GlobalMemory::GlobalMemory() : impl_(std::make_unique<Impl>()) {
  impl_->next = kBase;
}
GlobalMemory::~GlobalMemory() = default;

uint64_t GlobalMemory::allocate(size_t bytes) {
  const uint64_t addr = impl_->next;
  auto data = std::make_unique<uint8_t[]>(bytes ? bytes : 1);  // value-initialised: zeros
  impl_->allocations.emplace(addr, GlobalMemory::Impl::Allocation{std::move(data), bytes});
  impl_->next = (addr + bytes + kGap + 255) / 256 * 256;
  return addr;
}

void GlobalMemory::release(uint64_t address) {
  impl_->allocations.erase(address);
  if (impl_->allocations.empty()) impl_->next = kBase;
}

uint8_t* GlobalMemory::host_pointer(uint64_t address) {
  auto it = impl_->allocations.upper_bound(address);
  LEAP_CHECK(it != impl_->allocations.begin(), "no allocation at " << address);
  --it;
  LEAP_CHECK(address - it->first <= it->second.size, "no allocation at " << address);
  return it->second.data.get() + (address - it->first);
}

size_t GlobalMemory::size_of(uint64_t address) const {
  auto it = impl_->allocations.upper_bound(address);
  if (it == impl_->allocations.begin()) return 0;
  --it;
  return address - it->first <= it->second.size ? it->second.size - (address - it->first) : 0;
}

}  // namespace leap::sandbox::ptx
