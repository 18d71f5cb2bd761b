// Host-side launchers for code compiled by the host compiler (the launch syntax needs nvcc): the
// conversions of cuda/kernels/cast.cuh (fp32 -> bf16 for GEMM operands and weight copies, and
// both ways for NCCL's bf16 gradient communication), and cuda/kernels/gemm_empty.cuh for
// GemmRunner's k = 0 case.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace leap::cuda {

void launch_cast_to_bf16(__nv_bfloat16* out, const float* in, size_t n, cudaStream_t stream);
void launch_cast_from_bf16(float* out, const __nv_bfloat16* in, size_t n, cudaStream_t stream);
// D (m, n; column-major, leading dimension ldd) = beta D (+ bias (m) when not null).
void launch_gemm_empty_epilogue(float* d, const float* bias, int m, int n, int ldd, float beta,
                                cudaStream_t stream);

}  // namespace leap::cuda
