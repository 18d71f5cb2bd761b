// Marshalling: a planned launch's arguments laid out as the kernel's PTX entry declares its
// parameters (design.md, Answer format). The kernel's own declaration decides the bytes: a float
// goes as f32 or f64, an integer to the declared width (range-checked), a buffer as a 64-bit
// device address. A mismatch is the answer's fault: LAUNCH_ERROR naming the argument.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "sandbox/launch_plan.h"
#include "sandbox/ptx/interpreter.h"

namespace leap::sandbox {

// `buffer_addresses[i]` is the device address of Task::buffers[i], `scratch_addresses[i]` that of
// LaunchPlan::scratch[i]. Returns one byte string per parameter.
Expected<std::vector<std::vector<uint8_t>>> marshal_args(
    const PlannedLaunch& launch, const std::vector<ptx::ParamInfo>& params,
    const std::vector<uint64_t>& buffer_addresses, const std::vector<uint64_t>& scratch_addresses);

}  // namespace leap::sandbox
