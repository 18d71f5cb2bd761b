// Host-side launchers for the conversions of cuda/kernels/cast.cuh, for code compiled by the
// host compiler (the launch syntax needs nvcc): fp32 -> bf16 for GEMM operands and weight copies.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace leap::cuda {

void launch_cast_to_bf16(__nv_bfloat16* out, const float* in, size_t n, cudaStream_t stream);

}  // namespace leap::cuda
