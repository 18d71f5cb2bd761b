// The check of OpenBLAS's kernel choice (backend/blas_kernels.h) against the real library. ctest
// runs this program twice, with OPENBLAS_CORETYPE=Prescott (SSE3 kernels, as OpenBLAS picks for
// a CPU it does not know) and =Haswell (AVX2): OpenBLAS must report what was forced, and the
// warning must come exactly when the CPU, read from /proc/cpuinfo, could do better.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "backend/blas_kernels.h"

namespace {

// The first "flags" line of /proc/cpuinfo, as a set of words.
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  return flags;
}

TEST(BlasKernels, WarnsExactlyWhenTheKernelsWasteTheCpu) {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (forced == nullptr) GTEST_SKIP() << "run by ctest with OPENBLAS_CORETYPE set";
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags (not x86 Linux)";
  const bool avx2 = flags.count("avx2") != 0 && flags.count("fma") != 0;
  const bool avx512 = flags.count("avx512f") != 0;
  const std::string want(forced);
  if (want == "Haswell" && !avx2) GTEST_SKIP() << "this CPU has no AVX2: Haswell kernels can't run";

  EXPECT_EQ(leap::backend::blas_core_name(), want) << "OpenBLAS did not honour OPENBLAS_CORETYPE";
  const std::string warning = leap::backend::blas_kernel_warning();
  if (want == "Prescott" && avx2) {
    EXPECT_NE(warning.find("Prescott kernels"), std::string::npos) << warning;
    const std::string fix = avx512 ? "OPENBLAS_CORETYPE=SkylakeX" : "OPENBLAS_CORETYPE=Haswell";
    EXPECT_NE(warning.find(fix), std::string::npos) << warning;
  } else {
    EXPECT_EQ(warning, "");
  }
}

}  // namespace
