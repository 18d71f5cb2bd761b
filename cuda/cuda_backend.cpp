// CudaBackend, host side: device memory, staging of host integer arrays, and the matmuls on
// cuBLASLt (bf16 operands, fp32 accumulation and outputs). The other ops are in
// cuda_backend_ops.cu, which launches the kernels of cuda/kernels/.
#include "cuda/cuda_backend.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"
#include "cuda/storage_runs.h"

namespace leap::cuda {

CudaBackend::CudaBackend(CudaContext& ctx)
    : ctx_(&ctx), gemm_(ctx), weights_(ctx), bf16_weights_(ctx) {
  // Scratch comes from the compute stream's pool (device_buffer.h): regrowing it mid-backward
  // must not wait for the NCCL buckets on the comm stream.
  for (DeviceBuffer* b :
       {&operands_[0], &operands_[1], &partials_, &sampled_, &ones_, &bias_, &wide_})
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

float* CudaBackend::alloc_weights(size_t n, size_t bf16_floats) {
  return bf16_weights_.allocate(n, bf16_floats);
}

void CudaBackend::free_floats(float* p) {
  if (p == nullptr || bf16_weights_.release(p)) return;
  auto it = allocations_.find(p);
  LEAP_CHECK(it != allocations_.end(), "free_floats of a pointer this backend did not allocate");
  weights_.forget(p, it->second);
  // cudaFree waits for the device, so work still reading p finishes first.
  CUDA_CHECK(cudaFree(p));
  allocations_.erase(it);
}

// Each memory op first handles the part of its range in a model's bf16 matrices (always a prefix
// of the range: Bf16Weights::bf16_part), then the fp32 rest as before.

void CudaBackend::zero(float* p, size_t n) {
  const Bf16Weights::Part part = bf16_weights_.bf16_part(p, n);
  if (part.n > 0)
    CUDA_CHECK(cudaMemsetAsync(part.bf16, 0, part.n * sizeof(__nv_bfloat16), ctx_->compute()));
  p += part.n;
  n -= part.n;
  weights_.invalidate(p, n);
  CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), ctx_->compute()));
}

void CudaBackend::copy(float* dst, const float* src, size_t n) {
  auto prefix = [this](const float* p, size_t count) {
    return bf16_weights_.bf16_part(p, count).n;
  };
  for_each_storage_run(
      dst, src, n, prefix, [&](size_t at, size_t len, bool dst_bf16, bool src_bf16) {
        cudaStream_t st = ctx_->compute();
        __nv_bfloat16* d = bf16_weights_.bf16_part(dst + at, len).bf16;
        const __nv_bfloat16* s = bf16_weights_.bf16_part(src + at, len).bf16;
        if (dst_bf16 && src_bf16)
          CUDA_CHECK(
              cudaMemcpyAsync(d, s, len * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice, st));
        else if (dst_bf16)
          launch_cast_to_bf16(d, src + at, len, st);
        else if (src_bf16)
          launch_cast_from_bf16(dst + at, s, len, st);
        else
          CUDA_CHECK(cudaMemcpyAsync(dst + at, src + at, len * sizeof(float),
                                     cudaMemcpyDeviceToDevice, st));
        if (!dst_bf16) weights_.invalidate(dst + at, len);
      });
}

void CudaBackend::upload_bf16(__nv_bfloat16* dst, const float* host, size_t n) {
  for (size_t at = 0; at < n; at += kStagingFloats) {
    const size_t len = std::min(kStagingFloats, n - at);
    float* wide = wide_.reserve_as<float>(kStagingFloats);
    // Stream-ordered: the next chunk's copy into `wide` waits for this chunk's rounding.
    CUDA_CHECK(cudaMemcpyAsync(wide, host + at, len * sizeof(float), cudaMemcpyHostToDevice,
                               ctx_->compute()));
    launch_cast_to_bf16(dst + at, wide, len, ctx_->compute());
  }
}

void CudaBackend::download_bf16(float* host, const __nv_bfloat16* src, size_t n) {
  for (size_t at = 0; at < n; at += kStagingFloats) {
    const size_t len = std::min(kStagingFloats, n - at);
    float* wide = wide_.reserve_as<float>(kStagingFloats);
    launch_cast_from_bf16(wide, src + at, len, ctx_->compute());
    CUDA_CHECK(cudaMemcpyAsync(host + at, wide, len * sizeof(float), cudaMemcpyDeviceToHost,
                               ctx_->compute()));
  }
}

void CudaBackend::upload(float* dst, const float* host, size_t n) {
  const Bf16Weights::Part part = bf16_weights_.bf16_part(dst, n);
  if (part.n > 0) upload_bf16(part.bf16, host, part.n);
  dst += part.n;
  host += part.n;
  n -= part.n;
  weights_.invalidate(dst, n);
  // From pageable memory the copy has left `host` when the call returns, so the caller may
  // reuse it; it is ordered after the work already on the stream.
  CUDA_CHECK(
      cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyHostToDevice, ctx_->compute()));
}

void CudaBackend::download(float* host, const float* src, size_t n) {
  const Bf16Weights::Part part = bf16_weights_.bf16_part(src, n);
  if (part.n > 0) download_bf16(host, part.bf16, part.n);
  CUDA_CHECK(cudaMemcpyAsync(host + part.n, src + part.n, (n - part.n) * sizeof(float),
                             cudaMemcpyDeviceToHost, ctx_->compute()));
  CUDA_CHECK(cudaStreamSynchronize(ctx_->compute()));
}

void CudaBackend::round_to_bf16(float* dst, const float* src, size_t n) {
  LEAP_CHECK(bf16_weights_.bf16_part(dst, 1).n == 0, "round_to_bf16 into a model's bf16 matrices");
  weights_.invalidate(dst, (n + 1) / 2);
  auto* out = reinterpret_cast<__nv_bfloat16*>(dst);
  // A model's bf16 matrices are copied as they are (the frozen KL reference's copy of them).
  const Bf16Weights::Part part = bf16_weights_.bf16_part(src, n);
  if (part.n > 0)
    CUDA_CHECK(cudaMemcpyAsync(out, part.bf16, part.n * sizeof(__nv_bfloat16),
                               cudaMemcpyDeviceToDevice, ctx_->compute()));
  launch_cast_to_bf16(out + part.n, src + part.n, n - part.n, ctx_->compute());
}

void CudaBackend::widen_from_bf16(float* dst, const float* src, size_t n) {
  LEAP_CHECK(bf16_weights_.bf16_part(dst, 1).n == 0,
             "widen_from_bf16 into a model's bf16 matrices");
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

const __nv_bfloat16* CudaBackend::weight_bf16(const float* weight, size_t n) {
  const Bf16Weights::Part part = bf16_weights_.bf16_part(weight, n);
  if (part.n == 0) return weights_.get(weight, n);
  LEAP_CHECK(part.n == n, "a GEMM weight crosses the end of a model's bf16 matrices");
  return part.bf16;
}

// ---- matmul ---------------------------------------------------------------------------------
// Row-major products mapped to cuBLASLt's column-major view; see cuda/cublaslt_gemm.h.

void CudaBackend::matmul_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int N, int IC, int OC) {
  const auto* w = weight_bf16(weight, static_cast<size_t>(OC) * IC);
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
    const auto* w = weight_bf16(weight, static_cast<size_t>(OC) * IC);
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
