// Device detection, as docs/design.md (Isolation) specifies:
//  - cudaDriverGetVersion() == 0: no driver is installed: run on the CPU;
//  - cudaErrorNoDevice (e.g. CUDA_VISIBLE_DEVICES=""): no device: run on the CPU;
//  - a driver older than this toolkit needs: an error that says so, never a silent CPU
//    fallback. "Older" is by major version: CUDA's minor-version compatibility lets a driver of
//    CUDA 12.x (525.60.13+) run a build of any 12.y toolkit, and a 13.x driver (580+) any 13.y
//    build. The exception, JIT of PTX newer than the driver, never happens here: kernels are
//    built as SASS for the listed architectures and the sandbox asks NVRTC for CUBIN.
// Only the runtime API is used; nothing links libcuda, so this works on driverless machines.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace leap::cuda {

struct DeviceInfo {
  int count = 0;                  // usable GPUs; 0 means the CPU path
  int driver_cuda_version = 0;    // e.g. 13000, as cudaDriverGetVersion reports; 0 = no driver
  int runtime_cuda_version = 0;   // the toolkit this binary was built with; 0 = built without CUDA
  std::string reason;             // why there is no device, when count == 0
  std::vector<std::string> names; // one per device: "NVIDIA H200 (sm_90, 139 GiB)"
  std::string libraries;          // "cuBLASLt 13.0.0, NCCL 2.27.7" (they load without a device)
};

// Whether a driver reporting `driver_cuda_version` (cudaDriverGetVersion, e.g. 12020) runs a
// build made with the toolkit `runtime_cuda_version` (CUDART_VERSION): the same major version or
// a newer one.
bool driver_runs_build(int driver_cuda_version, int runtime_cuda_version);

// The first driver branch of a CUDA major version ("580" for 13), for messages.
std::string minimum_driver(int cuda_major);

// Fails only for a driver that is too old for this build.
Expected<DeviceInfo> probe_devices();

// One line for logs and `leap --version`: "device: 1 x NVIDIA H200 ..." or "device: none (...)".
std::string describe(const DeviceInfo& info);

}  // namespace leap::cuda
