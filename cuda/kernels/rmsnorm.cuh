// RMSNorm (HF Llama) of the CPU backend: out = x * rstd * w with rstd = 1/sqrt(mean(x^2) + eps),
// rstd (N) saved in fp32. Sums of squares and dot products are fp32 block reductions.
// The backward ACCUMULATES: dx += rstd * w * dy - (rstd^3 / C) * x * sum(w * dy * x), and
// dweight (C, fp32) += sum over rows of dy * x * rstd, which is two more kernels so that the
// column sums run in a fixed order (deterministic, no atomics): partial sums over chunks of
// `rows_per_chunk` rows, then the chunks' sums in order. One block per 32 channels over all N
// rows was 24 blocks at C = 768 on a 132-multiprocessor GPU, 9% of a training step.
//
// Launch:
//   rmsnorm_forward, rmsnorm_backward: grid N, block kRmsnormThreads, no dynamic smem.
//   rmsnorm_backward_dweight_partial: grid (cdiv(C, 32), cdiv(N, rows_per_chunk)), block
//     kRmsnormThreads, no dynamic smem; partial (chunks, C) fp32 is overwritten. Each block sums
//     32 channels over its chunk's rows (kRmsnormThreads / 32 row lanes, then in order).
//   rmsnorm_backward_dweight_finish: grid cdiv(C, kRmsnormThreads), block kRmsnormThreads.
// The backend uses rows_per_chunk = kRmsnormDweightRows, or more where N needs it.
// Limits: none beyond N <= 2^31 - 1 blocks, cdiv(N, rows_per_chunk) <= 65535; weight is the
// compute copy (T).
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/dtype.cuh"

namespace leap::cuda::kernels {

constexpr int kRmsnormThreads = 256;
constexpr int kRmsnormDweightRows = 256;

template <class T>
__global__ void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C,
                                float eps) {
  __shared__ float scratch[32];
  const int n = blockIdx.x;
  if (n >= N) return;
  const T* x = inp + static_cast<u64>(n) * C;
  T* y = out + static_cast<u64>(n) * C;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float v = to_float(x[c]);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float r = 1.0f / sqrtf(ss / static_cast<float>(C) + eps);
  if (threadIdx.x == 0) rstd[n] = r;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    y[c] = from_float<T>(to_float(x[c]) * r * to_float(weight[c]));
}

template <class T>
__global__ void rmsnorm_backward(T* dinp, const T* dout, const T* inp, const T* weight,
                                 const float* rstd, int N, int C) {
  __shared__ float scratch[32];
  const int n = blockIdx.x;
  if (n >= N) return;
  const u64 base = static_cast<u64>(n) * C;
  float dot = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    dot += to_float(weight[c]) * to_float(dout[base + c]) * to_float(inp[base + c]);
  dot = block_sum(dot, scratch);
  const float r = rstd[n];
  const float k = dot * r * r * r / static_cast<float>(C);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float dx =
        r * to_float(weight[c]) * to_float(dout[base + c]) - k * to_float(inp[base + c]);
    dinp[base + c] = from_float<T>(to_float(dinp[base + c]) + dx);
  }
}

template <class T>
__global__ void rmsnorm_backward_dweight_partial(float* partial, const T* dout, const T* inp,
                                                 const float* rstd, int N, int C,
                                                 int rows_per_chunk) {
  __shared__ float sums[kRmsnormThreads / 32][33];
  const int lane = threadIdx.x & 31, row_lane = threadIdx.x >> 5, row_lanes = blockDim.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  const int n0 = blockIdx.y * rows_per_chunk;
  const int n1 = N - n0 < rows_per_chunk ? N : n0 + rows_per_chunk;
  float acc = 0.0f;
  if (c < C) {
    for (int n = n0 + row_lane; n < n1; n += row_lanes) {
      const u64 i = static_cast<u64>(n) * C + c;
      acc += to_float(dout[i]) * to_float(inp[i]) * rstd[n];
    }
  }
  sums[row_lane][lane] = acc;
  __syncthreads();
  if (row_lane == 0 && c < C) {
    float sum = 0.0f;
    for (int j = 0; j < row_lanes; ++j) sum += sums[j][lane];
    partial[static_cast<u64>(blockIdx.y) * C + c] = sum;
  }
}

__global__ void rmsnorm_backward_dweight_finish(float* dweight, const float* partial, int chunks,
                                                int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sum = 0.0f;
  for (int k = 0; k < chunks; ++k) sum += partial[static_cast<u64>(k) * C + c];
  dweight[c] += sum;
}

}  // namespace leap::cuda::kernels
