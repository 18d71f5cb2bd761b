// The check of OpenBLAS's kernel choice against what the CPU supports (blas_kernels.h).
#include "backend/blas_kernels.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "cblas.h"

namespace leap::backend {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name != nullptr ? std::string(name) : std::string();
}

std::string blas_kernel_warning() {
#if defined(__x86_64__) || defined(__i386__)
  // OpenBLAS's x86 kernels that predate AVX2 and FMA: on a CPU with both they leave most of
  // each core's floating-point throughput unused.
  constexpr std::array<std::string_view, 14> kPreAvx2 = {
      "Prescott", "Core2",  "Penryn",    "Dunnington", "Nehalem",   "Atom",     "Sandybridge",
      "Katmai",   "Coppermine", "Northwood", "Banias",  "Barcelona", "Bobcat", "Bulldozer"};
  const std::string core = blas_core_name();
  const bool old = std::find(kPreAvx2.begin(), kPreAvx2.end(), core) != kPreAvx2.end();
  const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  if (!old || !avx2) return {};
  const char* fix = avx512 ? "SkylakeX" : "Haswell";
  return "OpenBLAS uses its " + core + " kernels, but this CPU has " +
         (avx512 ? std::string("AVX-512") : std::string("AVX2 and FMA")) +
         " (OpenBLAS does not know this CPU model): the CPU backend's GEMMs run several times "
         "slower than they could. Fix: export OPENBLAS_CORETYPE=" + fix +
         " before mpirun (mpirun -x OPENBLAS_CORETYPE passes it to every rank)";
#else
  return {};
#endif
}

}  // namespace leap::backend
