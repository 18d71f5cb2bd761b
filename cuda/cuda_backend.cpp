// CudaBackend, host side: device memory, staging of host integer arrays, and the matmuls on
// cuBLASLt (bf16 operands, fp32 accumulation and outputs). The other ops are in
// cuda_backend_ops.cu, which launches the kernels of cuda/kernels/.
#include "cuda/cuda_backend.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"

namespace leap::cuda {

CudaBackend::CudaBackend(CudaContext& ctx) : ctx_(&ctx), gemm_(ctx), weights_(ctx) {
  // Scratch comes from the compute stream's pool (device_buffer.h): regrowing it mid-backward
  // must not wait for the NCCL buckets on the comm stream.
  for (DeviceBuffer* b : {&operands_[0], &operands_[1], &partials_, &sampled_, &ones_, &bias_})
    b->set_stream(ctx.compute());
  for (DeviceBuffer& b : staged_) b.set_stream(ctx.compute());
}

void CudaBackend::bind_calling_thread() { CUDA_CHECK(cudaSetDevice(ctx_->device())); }

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(ctx_->compute());
  for (auto& [p, n] : allocations_) cudaFree(p);
}

// ---- memory ---------------------------------------------------------------------------------

float* CudaBackend::alloc_floats(size_t n) {
  float* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, (n == 0 ? 1 : n) * sizeof(float)));
  CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), ctx_->compute()));
  allocations_[p] = n;
  return p;
}

void CudaBackend::free_floats(float* p) {
  if (p == nullptr) return;
  auto it = allocations_.find(p);
  LEAP_CHECK(it != allocations_.end(), "free_floats of a pointer this backend did not allocate");
  weights_.forget(p, it->second);
  // cudaFree waits for the device, so work still reading p finishes first.
  CUDA_CHECK(cudaFree(p));
  allocations_.erase(it);
}

void CudaBackend::zero(float* p, size_t n) {
  weights_.invalidate(p, n);
  CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), ctx_->compute()));
}

void CudaBackend::copy(float* dst, const float* src, size_t n) {
  weights_.invalidate(dst, n);
  CUDA_CHECK(
      cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx_->compute()));
}

void CudaBackend::upload(float* dst, const float* host, size_t n) {
  weights_.invalidate(dst, n);
  // From pageable memory the copy has left `host` when the call returns, so the caller may
  // reuse it; it is ordered after the work already on the stream.
  CUDA_CHECK(
      cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyHostToDevice, ctx_->compute()));
}

void CudaBackend::download(float* host, const float* src, size_t n) {
  CUDA_CHECK(
      cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDeviceToHost, ctx_->compute()));
  CUDA_CHECK(cudaStreamSynchronize(ctx_->compute()));
}

void CudaBackend::round_to_bf16(float* dst, const float* src, size_t n) {
  weights_.invalidate(dst, (n + 1) / 2);
  launch_cast_to_bf16(reinterpret_cast<__nv_bfloat16*>(dst), src, n, ctx_->compute());
}

void CudaBackend::widen_from_bf16(float* dst, const float* src, size_t n) {
  // dst is usually a scratch that held other weights: their bf16 compute copies are stale.
  weights_.invalidate(dst, n);
  launch_cast_from_bf16(dst, reinterpret_cast<const __nv_bfloat16*>(src), n, ctx_->compute());
}

const int32_t* CudaBackend::stage(int slot, const int32_t* host, size_t n) {
  // A copy from pageable memory waits for the stream first, so it is skipped when the slot
  // already holds these values: the positions are the same for every layer's RoPE, forward
  // and backward, so a training step stages them once.
  std::vector<int32_t>& mirror = staged_host_[slot];
  auto* dev = staged_[slot].reserve_as<int32_t>(n == 0 ? 1 : n);
  if (mirror.size() == n && dev == staged_ptr_[slot] &&
      std::equal(mirror.begin(), mirror.end(), host)) {
    return dev;
  }
  CUDA_CHECK(
      cudaMemcpyAsync(dev, host, n * sizeof(int32_t), cudaMemcpyHostToDevice, ctx_->compute()));
  mirror.assign(host, host + n);
  staged_ptr_[slot] = dev;
  return dev;
}

const __nv_bfloat16* CudaBackend::operand_bf16(int slot, const float* x, size_t n) {
  auto* dev = operands_[slot].reserve_as<__nv_bfloat16>(n == 0 ? 1 : n);
  launch_cast_to_bf16(dev, x, n, ctx_->compute());
  return dev;
}

const float* CudaBackend::ones(size_t n) {
  if (n > ones_n_) {
    std::vector<float> host(n, 1.0f);
    float* dev = ones_.reserve_as<float>(n);
    CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                               ctx_->compute()));
    CUDA_CHECK(cudaStreamSynchronize(ctx_->compute()));  // `host` dies here
    ones_n_ = n;
  }
  return static_cast<const float*>(ones_.reserve(0));
}

// ---- matmul ---------------------------------------------------------------------------------
// Row-major products mapped to cuBLASLt's column-major view; see cuda/cublaslt_gemm.h.

void CudaBackend::matmul_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int N, int IC, int OC) {
  const auto* w = weights_.get(weight, static_cast<size_t>(OC) * IC);
  const auto* x = operand_bf16(0, inp, static_cast<size_t>(N) * IC);
  if (bias != nullptr && reinterpret_cast<uintptr_t>(bias) % 16 != 0) {
    // The bias epilogue reads vectors; a bias view into the parameter arena may be only
    // 4-byte aligned, so it is read from an aligned copy (OC floats: negligible).
    float* aligned = bias_.reserve_as<float>(static_cast<size_t>(OC));
    CUDA_CHECK(cudaMemcpyAsync(aligned, bias, static_cast<size_t>(OC) * sizeof(float),
                               cudaMemcpyDeviceToDevice, ctx_->compute()));
    bias = aligned;
  }
  GemmProblem p{.m = OC,
                .n = N,
                .k = IC,
                .trans_a = true,
                .trans_b = false,
                .lda = IC,
                .ldb = IC,
                .ldc = OC,
                .bias = bias != nullptr};
  gemm_.run(p, w, x, out, 1.0f, 0.0f, bias);
}

void CudaBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int N, int IC, int OC) {
  const auto* dy = operand_bf16(0, dout, static_cast<size_t>(N) * OC);
  if (dinp != nullptr) {
    const auto* w = weights_.get(weight, static_cast<size_t>(OC) * IC);
    GemmProblem p{.m = IC,
                  .n = N,
                  .k = OC,
                  .trans_a = false,
                  .trans_b = false,
                  .lda = IC,
                  .ldb = OC,
                  .ldc = IC};
    gemm_.run(p, w, dy, dinp, 1.0f, 1.0f);
  }
  if (dweight != nullptr) {
    const auto* x = operand_bf16(1, inp, static_cast<size_t>(N) * IC);
    GemmProblem p{.m = IC,
                  .n = OC,
                  .k = N,
                  .trans_a = false,
                  .trans_b = true,
                  .lda = IC,
                  .ldb = OC,
                  .ldc = IC};
    gemm_.run(p, x, dy, dweight, 1.0f, 1.0f);
  }
  if (dbias != nullptr) {
    // dbias (OC) += dout^T (OC, N) @ ones (N): an fp32 GEMV, so the bias gradient keeps fp32.
    GemmProblem p{.m = OC,
                  .n = 1,
                  .k = N,
                  .trans_a = false,
                  .trans_b = false,
                  .type_ab = CUDA_R_32F,
                  .lda = OC,
                  .ldb = N,
                  .ldc = OC};
    gemm_.run(p, dout, ones(static_cast<size_t>(N)), dbias, 1.0f, 1.0f);
  }
}

}  // namespace leap::cuda
