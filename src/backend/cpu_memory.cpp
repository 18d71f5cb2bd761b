// CpuBackend: construction (thread counts) and host memory. Buffers are 64-byte aligned so that
// rows start on cache lines and vector loads never split them.
#include <omp.h>

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

void CpuBackend::free_floats(float* p) {
  std::free(p);
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
