// Conversions between the fp32 master copy and the compute type T: after each AdamW step the
// bf16 weights the GEMMs read are refreshed from the fp32 master weights (adamw.cuh can fuse
// this), and bf16 activations or gradients are widened to fp32 where the host needs them.
//
// Launch (both kernels): grid elementwise_blocks(n), block kElementwiseThreads, no shared memory.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

// out[i] = T(in[i]), rounded to nearest-even for bf16.
template <class T>
__global__ void cast_from_f32(T* out, const float* in, u64 n) {
  for (u64 i = grid_first(); i < n; i += grid_stride()) out[i] = from_float<T>(in[i]);
}

// out[i] = float(in[i]) (exact).
template <class T>
__global__ void cast_to_f32(float* out, const T* in, u64 n) {
  for (u64 i = grid_first(); i < n; i += grid_stride()) out[i] = to_float(in[i]);
}

}  // namespace leap::cuda::kernels
