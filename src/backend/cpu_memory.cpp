// CpuBackend: construction (thread counts) and host memory. Buffers are 64-byte aligned so that
// rows start on cache lines and vector loads never split them.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu_backend.h"
#include "cblas.h"
#include "common/bf16.h"
#include "common/check.h"

namespace leap::backend {

CpuBackend::CpuBackend(int threads) : threads_(threads) {
  // Process-wide library state; one CpuBackend per process is the rule. OpenBLAS stays
  // single-threaded: gemm() (cpu_gemm.h) threads it with OpenMP.
  openblas_set_num_threads(1);
  if (threads_ > 0)
    omp_set_num_threads(threads_);
  else
    threads_ = omp_get_max_threads();
}

void CpuBackend::bind_calling_thread() { omp_set_num_threads(threads_); }

float* CpuBackend::alloc_floats(size_t n) {
  size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  if (bytes == 0) bytes = 64;
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return static_cast<float*>(p);
}

float* CpuBackend::alloc_weights(size_t n, size_t bf16_floats) {
  LEAP_CHECK(bf16_floats <= n,
             "alloc_weights: a bf16 part of " << bf16_floats << " floats in a buffer of " << n);
  float* p = alloc_floats(n);
  if (bf16_floats > 0) bf16_parts_.emplace_back(p, bf16_floats);
  return p;
}

void CpuBackend::free_floats(float* p) {
  if (p == nullptr) return;
  std::erase_if(bf16_parts_, [p](const auto& part) { return part.first == p; });
  std::free(p);
}

void CpuBackend::round_bf16_parts(float* p, size_t n) const {
  for (const auto& [start, count] : bf16_parts_) {
    float* lo = std::max(p, start);
    float* hi = std::min(p + n, start + count);
    for (float* x = lo; x < hi; ++x) *x = bf16_to_f32(f32_to_bf16(*x));
  }
}

void CpuBackend::zero(float* p, size_t n) {
  std::memset(p, 0, n * sizeof(float));
}
void CpuBackend::copy(float* dst, const float* src, size_t n) {
  // The contract is disjoint ranges (a device copy of overlapping ones is undefined): checked
  // here, where every test runs, so that no caller comes to depend on memmove.
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src), bytes = n * sizeof(float);
  LEAP_CHECK(d == s || d + bytes <= s || s + bytes <= d, "Backend::copy of overlapping ranges");
  std::memmove(dst, src, n * sizeof(float));
  round_bf16_parts(dst, n);
}
void CpuBackend::upload(float* dst, const float* host, size_t n) {
  copy(dst, host, n);
}
void CpuBackend::download(float* host, const float* src, size_t n) {
  copy(host, src, n);
}
void CpuBackend::round_to_bf16(float* dst, const float* src, size_t n) {
  f32_to_bf16(src, n, reinterpret_cast<uint16_t*>(dst));
}
void CpuBackend::widen_from_bf16(float* dst, const float* src, size_t n) {
  bf16_to_f32(reinterpret_cast<const uint16_t*>(src), n, dst);
}

}  // namespace leap::backend
