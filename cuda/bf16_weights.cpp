// Bf16Weights: reserved address space, a mapped fp32 tail and a bf16 buffer (see bf16_weights.h).
#include "cuda/bf16_weights.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <string>

#include "common/check.h"
#include "cuda/cuda_check.h"
#include "cuda/storage_runs.h"

namespace leap::cuda {

struct Bf16Weights::Driver {
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
};

namespace {

template <class F>
void find_entry(const char* symbol, F* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &p, 10020, cudaEnableDefault, &found));
  LEAP_CHECK(found == cudaDriverEntryPointSuccess && p != nullptr,
             "the CUDA driver has no " << symbol << " (virtual memory management, CUDA 10.2+): "
                                       << "set optim.master_weights = replica");
  *fn = reinterpret_cast<F>(p);
}

void driver_check(CUresult rc, const char* what) {
  LEAP_CHECK(rc == CUDA_SUCCESS,
             what << " failed (CUresult " << static_cast<int>(rc)
                  << "): the bf16 weights (optim.master_weights = optimizer) could not be "
                     "mapped; set optim.master_weights = replica");
}

size_t round_up(size_t x, size_t to) {
  return (x + to - 1) / to * to;
}

}  // namespace

const Bf16Weights::Driver& Bf16Weights::driver() {
  if (!driver_) {
    auto d = std::make_unique<Driver>();
    find_entry("cuMemAddressReserve", &d->reserve);
    find_entry("cuMemAddressFree", &d->address_free);
    find_entry("cuMemCreate", &d->create);
    find_entry("cuMemRelease", &d->release);
    find_entry("cuMemMap", &d->map);
    find_entry("cuMemUnmap", &d->unmap);
    find_entry("cuMemSetAccess", &d->set_access);
    find_entry("cuMemGetAllocationGranularity", &d->granularity);
    driver_ = std::move(d);
  }
  return *driver_;
}

Bf16Weights::Bf16Weights(CudaContext& ctx) : ctx_(&ctx) {}

Bf16Weights::~Bf16Weights() {
  if (buffers_.empty()) return;
  cudaDeviceSynchronize();
  for (auto& [p, b] : buffers_) free_buffer(b);
}

float* Bf16Weights::allocate(size_t n, size_t bf16_floats) {
  LEAP_CHECK(bf16_floats <= n,
             "alloc_weights: a bf16 part of " << bf16_floats << " floats in a buffer of " << n);
  const Driver& d = driver();
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ctx_->device();
  size_t page = 0;
  driver_check(d.granularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "cuMemGetAllocationGranularity");
  Buffer b;
  b.floats = n;
  b.bf16_floats = bf16_floats;
  b.reserved_bytes = round_up(std::max<size_t>(n, 1) * sizeof(float), page);
  driver_check(d.reserve(&b.reserved, b.reserved_bytes, page, 0, 0), "cuMemAddressReserve");
  // Backed from the page that holds the first fp32 float to the end.
  const size_t first_page = bf16_floats * sizeof(float) / page * page;
  b.mapped_bytes = b.reserved_bytes - first_page;
  if (b.mapped_bytes > 0) {
    b.mapped = b.reserved + first_page;
    driver_check(d.create(&b.handle, b.mapped_bytes, &prop, 0), "cuMemCreate");
    driver_check(d.map(b.mapped, b.mapped_bytes, 0, b.handle, 0), "cuMemMap");
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    driver_check(d.set_access(b.mapped, b.mapped_bytes, &access, 1), "cuMemSetAccess");
    CUDA_CHECK(
        cudaMemsetAsync(reinterpret_cast<void*>(b.mapped), 0, b.mapped_bytes, ctx_->compute()));
  }
  if (bf16_floats > 0) {
    CUDA_CHECK(cudaMalloc(&b.bf16, bf16_floats * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMemsetAsync(b.bf16, 0, bf16_floats * sizeof(__nv_bfloat16), ctx_->compute()));
  }
  auto* p = reinterpret_cast<float*>(b.reserved);
  buffers_[p] = b;
  return p;
}

void Bf16Weights::free_buffer(Buffer& b) {
  const Driver& d = driver();
  if (b.mapped_bytes > 0) {
    d.unmap(b.mapped, b.mapped_bytes);
    d.release(b.handle);
  }
  d.address_free(b.reserved, b.reserved_bytes);
  cudaFree(b.bf16);
}

bool Bf16Weights::release(float* p) {
  auto it = buffers_.find(p);
  if (it == buffers_.end()) return false;
  // Work still using the buffer finishes first, on every stream (the compute stream's kernels, an
  // all-gather on the comm stream): cudaFree would wait so, unmapping does not.
  CUDA_CHECK(cudaDeviceSynchronize());
  free_buffer(it->second);
  buffers_.erase(it);
  return true;
}

Bf16Weights::Part Bf16Weights::bf16_part(const float* p, size_t n) const {
  const auto [it, count] = bf16_prefix(buffers_, p, n);
  if (count == 0) return {};
  return {it->second.bf16 + (p - it->first), count};
}

}  // namespace leap::cuda
