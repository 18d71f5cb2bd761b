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

namespace {

bool has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") != 0;
#else
  return false;
#endif
}

bool has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
#else
  return false;
#endif
}

}  // namespace

std::string cpu_vector_units() {
  if (has_avx512()) return "AVX-512";
  return has_avx2_fma() ? "AVX2 and FMA" : "no AVX2";
}

std::string blas_coretype_fix() {
  // OpenBLAS's x86 kernels that predate AVX2 and FMA: on a CPU with both they leave most of
  // each core's floating-point throughput unused.
  constexpr std::array<std::string_view, 14> kPreAvx2 = {
      "Prescott", "Core2",  "Penryn",    "Dunnington", "Nehalem",   "Atom",     "Sandybridge",
      "Katmai",   "Coppermine", "Northwood", "Banias",  "Barcelona", "Bobcat", "Bulldozer"};
  const std::string core = blas_core_name();
  const bool old = std::find(kPreAvx2.begin(), kPreAvx2.end(), core) != kPreAvx2.end();
  if (!old || !has_avx2_fma()) return {};
  return has_avx512() ? "SkylakeX" : "Haswell";
}

std::string blas_kernel_warning() {
  const std::string fix = blas_coretype_fix();
  if (fix.empty()) return {};
  return "OpenBLAS uses its " + blas_core_name() + " kernels, but this CPU has " +
         cpu_vector_units() +
         " (OpenBLAS does not know this CPU model): the CPU backend's GEMMs run several times "
         "slower than they could. Fix: export OPENBLAS_CORETYPE=" + fix +
         " before mpirun (mpirun -x OPENBLAS_CORETYPE passes it to every rank; "
         "scripts/mpirun_local.sh and the CPU jobscripts set it themselves)";
}

}  // namespace leap::backend
