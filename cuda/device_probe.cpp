// Device detection through the CUDA runtime API (or a CPU-only answer when built without CUDA).
#include "cuda/device_probe.h"

#include <fmt/format.h>

#ifdef LEAP_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#ifdef LEAP_HAVE_NCCL
#include <nccl.h>
#endif
#endif

namespace leap::cuda {

bool driver_runs_build(int driver_cuda_version, int runtime_cuda_version) {
  return driver_cuda_version > 0 && driver_cuda_version / 1000 >= runtime_cuda_version / 1000;
}

std::string minimum_driver(int cuda_major) {
  switch (cuda_major) {
    case 12: return "525.60.13";
    case 13: return "580";
    default: return "the one of CUDA " + std::to_string(cuda_major) + ".0";
  }
}

Expected<DeviceInfo> probe_devices() {
  DeviceInfo info;
#ifndef LEAP_HAVE_CUDA
  info.reason = "this build has no CUDA backend (LEAP_CUDA=OFF or nvcc not found)";
  return info;
#else
  info.runtime_cuda_version = CUDART_VERSION;
  {
    size_t lt = cublasLtGetVersion();
    int nccl = 0;
#ifdef LEAP_HAVE_NCCL
    ncclGetVersion(&nccl);
#endif
    info.libraries = fmt::format("CUDA runtime {}.{}, cuBLASLt {}.{}.{}, NCCL {}.{}.{}", CUDART_VERSION / 1000,
                                 CUDART_VERSION % 1000 / 10, lt / 10000, lt / 100 % 100, lt % 100, nccl / 10000,
                                 nccl / 100 % 100, nccl % 100);
  }
  if (cudaDriverGetVersion(&info.driver_cuda_version) != cudaSuccess || info.driver_cuda_version == 0) {
    info.driver_cuda_version = 0;
    info.reason = "no CUDA driver installed";
    return info;
  }
  auto too_old = [&] {
    return unsupported(fmt::format(
        "the NVIDIA driver supports CUDA {}.{} but this build needs CUDA {}.x (driver {} or newer): "
        "update the driver, install the matching cuda-compat package, build with a CUDA {}.x "
        "toolkit (docs/cuda_backend.md, Drivers), or run on the CPU with CUDA_VISIBLE_DEVICES=\"\"",
        info.driver_cuda_version / 1000, info.driver_cuda_version % 1000 / 10, CUDART_VERSION / 1000,
        minimum_driver(CUDART_VERSION / 1000), info.driver_cuda_version / 1000));
  };
  if (!driver_runs_build(info.driver_cuda_version, CUDART_VERSION)) return too_old();
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaErrorNoDevice) {
    info.reason = "no CUDA device visible (CUDA_VISIBLE_DEVICES may be empty)";
    return info;
  }
  if (err == cudaErrorInsufficientDriver) return too_old();
  if (err != cudaSuccess) {
    info.reason = fmt::format("CUDA reports {}", cudaGetErrorString(err));
    return info;
  }
  info.count = n;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess) {
      info.names.push_back(fmt::format("{} (sm_{}{}, {} GiB)", p.name, p.major, p.minor,
                                       p.totalGlobalMem >> 30));
    }
  }
  return info;
#endif
}

std::string describe(const DeviceInfo& info) {
  if (info.count == 0) return "device: none (" + info.reason + "); using the CPU";
  std::string out = fmt::format("device: {} GPU(s), driver CUDA {}.{}", info.count,
                                info.driver_cuda_version / 1000, info.driver_cuda_version % 1000 / 10);
  for (const auto& n : info.names) out += "; " + n;
  return out;
}

}  // namespace leap::cuda
