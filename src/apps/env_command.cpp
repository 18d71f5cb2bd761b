// `leap env`: what this node gives leap, one line each: the CPU's hardware threads and vector
// units, the kernels OpenBLAS chose for it (and the OPENBLAS_CORETYPE that fixes a pre-AVX2
// choice), the thread settings, and the GPUs. `--openblas-coretype` prints only that fix, or
// nothing, for the launch scripts: OpenBLAS reads OPENBLAS_CORETYPE when it loads, before
// leap's main() runs, so the variable must be set by whoever starts the ranks. Also the device
// lines `leap --version` shares.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "apps/subcommands.h"
#include "backend/blas_kernels.h"
#include "cuda/device_probe.h"

namespace leap::app {
namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

int print_devices(const char* sub) {
  auto dev = cuda::probe_devices();
  if (!dev) return report_error(sub, dev.status());
  std::printf("%s\n", cuda::describe(*dev).c_str());
  if (!dev->libraries.empty()) std::printf("libraries: %s\n", dev->libraries.c_str());
  return 0;
}

int run_env(const std::vector<std::string>& args) {
  bool coretype_only = false;
  OptionSet opts;
  opts.add("env.openblas_coretype", &coretype_only, false,
           "Print only the OPENBLAS_CORETYPE value this CPU needs (SkylakeX, Haswell), or an "
           "empty line when OpenBLAS's own choice is fine.",
           {.alias = "openblas-coretype"});
  if (int rc = parse_or_exit("env", "[--openblas-coretype]", args, opts); rc >= 0) return rc;
  const std::string fix = backend::blas_coretype_fix();
  if (coretype_only) {
    std::printf("%s\n", fix.c_str());
    return 0;
  }
  std::printf("cpu: %u hardware threads, %s\n", std::thread::hardware_concurrency(),
              backend::cpu_vector_units().c_str());
  std::printf("openblas: %s kernels (OPENBLAS_CORETYPE %s)\n", backend::blas_core_name().c_str(),
              env_or("OPENBLAS_CORETYPE", "unset"));
  if (!fix.empty())
    std::printf("openblas: these kernels predate the CPU's vector units; export OPENBLAS_CORETYPE=%s "
                "before mpirun\n",
                fix.c_str());
  std::printf("threads: OMP_NUM_THREADS %s, OPENBLAS_NUM_THREADS %s\n",
              env_or("OMP_NUM_THREADS", "unset"), env_or("OPENBLAS_NUM_THREADS", "unset"));
  return print_devices("env");
}

}  // namespace leap::app
