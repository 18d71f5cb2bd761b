// AdamW of the CPU backend (torch.optim.AdamW's order of operations), on the fp32 master
// weights and fp32 moments, with the fp32 gradient scaled by grad_scale (global-norm clipping):
//   g = grad * grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//   param = param * (1 - lr wd) - lr/(1-b1^t) * m / (sqrt(v) / sqrt(1-b2^t) + eps).
// t is the 1-based step. When `compute` is not null it also receives T(param), the copy the
// GEMMs read, so no separate cast pass is needed.
//
// Launch: grid elementwise_blocks(n), block kElementwiseThreads, no shared memory.
#pragma once

#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

template <class T>
__global__ void adamw_update(float* params, float* m, float* v, const float* grads, T* compute,
                             u64 n, float lr, float beta1, float beta2, float eps,
                             float weight_decay, float grad_scale, int t) {
  const float bc1 = 1.0f - powf(beta1, static_cast<float>(t));
  const float bc2_sqrt = sqrtf(1.0f - powf(beta2, static_cast<float>(t)));
  const float step = lr / bc1;
  const float decay = 1.0f - lr * weight_decay;
  for (u64 i = grid_first(); i < n; i += grid_stride()) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p = params[i] * decay - step * mi / (sqrtf(vi) / bc2_sqrt + eps);
    params[i] = p;
    if (compute != nullptr) compute[i] = from_float<T>(p);
  }
}

}  // namespace leap::cuda::kernels
