// The residual add of the CPU backend's add_forward: out = a + b, element-wise, in fp32 and
// rounded once to T. out may alias a or b (the residual stream adds in place); the residual's
// backward is the same kernel with out = a = the gradient being accumulated into.
//
// Launch: grid elementwise_blocks(n), block kElementwiseThreads, no shared memory.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

template <class T>
__global__ void add_forward(T* out, const T* a, const T* b, u64 n) {
  for (u64 i = grid_first(); i < n; i += grid_stride())
    out[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

}  // namespace leap::cuda::kernels
