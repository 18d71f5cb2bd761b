// `leap_gpu_check info`: what this machine and build have — device, driver, runtime and library
// versions, peak figures the benchmarks compare against, and which tiers were built.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "cuda/check/checks.h"
#include "cuda/device_probe.h"
#include "leap/version.h"

namespace leap::cuda::check {

Expected<JsonRecord> run_info(const CheckArgs& args) {
  (void)args;
  JsonRecord r;
  r.set("leap_version", LEAP_VERSION).set("git_commit", LEAP_GIT_COMMIT);
  LEAP_ASSIGN_OR_RETURN(DeviceInfo info, probe_devices());
  r.set("runtime_cuda_version", info.runtime_cuda_version)
      .set("driver_cuda_version", info.driver_cuda_version)
      .set("libraries", info.libraries)
      .set("devices", info.count)
      .set("summary", describe(info));
#ifdef LEAP_HAVE_NCCL
  r.set("nccl", true);
#else
  r.set("nccl", false);
#endif
#ifdef LEAP_CHECK_HAS_MODEL
  r.set("model_tier", true);
#else
  r.set("model_tier", false);
#endif
#ifdef LEAP_CHECK_HAS_SANDBOX
  r.set("sandbox_tier", true);
#else
  r.set("sandbox_tier", false);
#endif
  if (info.count == 0) {
    std::fprintf(stderr, "%s\n", describe(info).c_str());
    return r;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
    int mem_clock_khz = 0, bus_bits = 0, sm_clock_khz = 0;
    cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
    cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, 0);
    r.set("name", p.name)
        .set("sm", p.major * 10 + p.minor)
        .set("sms", p.multiProcessorCount)
        .set("memory_gib", static_cast<double>(p.totalGlobalMem) / (1 << 30))
        .set("sm_clock_mhz", sm_clock_khz / 1000.0)
        // DDR: two transfers per clock.
        .set("hbm_peak_gb_s", 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8) / 1e9);
  }
  std::fprintf(stderr, "%s\n%s\n", describe(info).c_str(), info.libraries.c_str());
  return r;
}

}  // namespace leap::cuda::check
