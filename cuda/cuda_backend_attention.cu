// CudaBackend, device side: attention (training/prefill, backward, KV-cache decode), the LM
// head's fused log-softmax and token selection, launching the kernels of
// cuda/kernels/attention*.cuh, logprob.cuh and sample.cuh.
//
// The attention kernels take the head dimension D as a template argument; the launchers below
// instantiate D = 8, 16, 32, 64, 128 (each one costs compile time for every architecture) and
// stop with a clear message for any other D. The training kernels of D = 64 and 128 are
// attention_wide.cuh's register-tiled ones, the others attention.cuh's. The wide kernels take
// 69-170 KB of shared memory: where the GPU lets a block opt in to less (A100: 163 KB, so its
// D = 128 dk/dv; sm_89 cards: 99 KB), that launch runs attention.cuh's kernel instead.
// What attention_forward saves in `att`, per layer: lse (B, H, T), then a copy of out
// (B, T, H, D), because the backward's delta = rowsum(dout * out) needs the output and the op
// interface passes only the saved buffer.
#include <cuda_runtime.h>

#include <cmath>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/attention_wide.cuh"
#include "cuda/kernels/attention_decode.cuh"
#include "cuda/kernels/logprob.cuh"
#include "cuda/kernels/sample.cuh"

namespace leap::cuda {

namespace kn = kernels;

namespace {

void check_launch() {
  CUDA_CHECK(cudaGetLastError());
}

// Calls f(std::integral_constant<int, D>) for a compiled head dimension.
template <class F>
void with_head_dim(int D, F&& f) {
  switch (D) {
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 16:
      return f(std::integral_constant<int, 16>{});
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    case 128:
      return f(std::integral_constant<int, 128>{});
    default:
      LEAP_FATAL(
          "the CUDA attention kernels are compiled for head_dim 8, 16, 32, 64 and 128, "
          "not "
          << D << ": add it to with_head_dim in cuda/cuda_backend_attention.cu");
  }
}

// Opts a kernel into more than 48 KB of dynamic shared memory when it needs it.
template <class Kernel>
void allow_smem(Kernel kernel, unsigned bytes) {
  if (bytes > 48 * 1024) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)));
  }
}

// Opts `kernel` into `smem` bytes of dynamic shared memory and launches it on `stream`.
template <class Kernel, class... Args>
void launch(Kernel kernel, dim3 grid, unsigned threads, unsigned smem, cudaStream_t stream,
            Args... args) {
  allow_smem(kernel, smem);
  kernel<<<grid, threads, smem, stream>>>(args...);
  check_launch();
}

unsigned wide_tiles(int T) {
  return static_cast<unsigned>(kn::cdiv(T, kn::kWideTile));
}

}  // namespace

size_t CudaBackend::attention_saved_floats(int B, int T, int H, int D) const {
  const size_t rows = static_cast<size_t>(B) * T * H;
  // lse, then out; the out copy starts on a 16-float boundary so it stays 64-byte aligned.
  return (rows + 15) / 16 * 16 + rows * D;
}

void CudaBackend::attention_forward(float* out, float* att, const float* q, const float* k,
                                    const float* v, int B, int T, int H, int Hkv, int D) {
  if (B == 0 || T == 0) return;
  LEAP_CHECK(H % Hkv == 0, "H " << H << " is not a multiple of Hkv " << Hkv);
  float* lse = att;
  const size_t rows = static_cast<size_t>(B) * T * H;
  float* out_copy = att + (rows + 15) / 16 * 16;
  const unsigned optin = static_cast<unsigned>(ctx_->properties().sharedMemPerBlockOptin);
  with_head_dim(D, [&](auto d) {
    constexpr int kD = decltype(d)::value;
    if constexpr (kD == 64 || kD == 128) {
      const unsigned smem = kn::wide_forward_smem_bytes(kD);
      if (smem <= optin) {
        launch(kn::attention_forward_wide<float, kD>, dim3(wide_tiles(T), H, B), kn::kWideThreads,
               smem, ctx_->compute(), out, lse, q, k, v, B, T, H, Hkv);
        return;
      }
    }
    launch(kn::attention_forward<float, kD>,
           dim3(static_cast<unsigned>(kn::cdiv(T, kn::kAttnBr)), H, B), kn::kAttnThreads,
           kn::attention_forward_smem_bytes(kD), ctx_->compute(), out, lse, q, k, v, B, T, H, Hkv);
  });
  CUDA_CHECK(cudaMemcpyAsync(out_copy, out, rows * D * sizeof(float), cudaMemcpyDeviceToDevice,
                             ctx_->compute()));
}

void CudaBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout,
                                     const float* att, const float* q, const float* k,
                                     const float* v, int B, int T, int H, int Hkv, int D) {
  if (B == 0 || T == 0) return;
  LEAP_CHECK(H % Hkv == 0, "H " << H << " is not a multiple of Hkv " << Hkv);
  const float* lse = att;
  const size_t rows = static_cast<size_t>(B) * T * H;
  const float* out = att + (rows + 15) / 16 * 16;
  float* delta = partials_.reserve_as<float>(rows);
  kn::attention_backward_delta<float>
      <<<kn::elementwise_blocks(rows), kn::kElementwiseThreads, 0, ctx_->compute()>>>(
          delta, dout, out, B, T, H, D);
  check_launch();
  const unsigned optin = static_cast<unsigned>(ctx_->properties().sharedMemPerBlockOptin);
  with_head_dim(D, [&](auto d) {
    constexpr int kD = decltype(d)::value;
    bool wide_dkdv = false, wide_dq = false;
    if constexpr (kD == 64 || kD == 128) {
      wide_dkdv = kn::wide_dkdv_smem_bytes(kD) <= optin;
      wide_dq = kn::wide_dq_smem_bytes(kD) <= optin;
      if (wide_dkdv)
        launch(kn::attention_backward_dkdv_wide<float, kD>, dim3(wide_tiles(T), Hkv, B),
               kn::kWideThreads, kn::wide_dkdv_smem_bytes(kD), ctx_->compute(), dk, dv, dout, lse,
               delta, q, k, v, B, T, H, Hkv);
      if (wide_dq)
        launch(kn::attention_backward_dq_wide<float, kD>, dim3(wide_tiles(T), H, B),
               kn::kWideThreads, kn::wide_dq_smem_bytes(kD), ctx_->compute(), dq, dout, lse, delta,
               q, k, v, B, T, H, Hkv);
    }
    if (!wide_dkdv)
      launch(kn::attention_backward_dkdv<float, kD>,
             dim3(static_cast<unsigned>(kn::cdiv(T, kn::kAttnBc)), Hkv, B), kn::kAttnThreads,
             kn::attention_dkdv_smem_bytes(kD), ctx_->compute(), dk, dv, dout, lse, delta, q, k, v,
             B, T, H, Hkv);
    if (!wide_dq)
      launch(kn::attention_backward_dq<float, kD>,
             dim3(static_cast<unsigned>(kn::cdiv(T, kn::kAttnBr)), H, B), kn::kAttnThreads,
             kn::attention_dq_smem_bytes(kD), ctx_->compute(), dq, dout, lse, delta, q, k, v, B, T,
             H, Hkv);
  });
}

void CudaBackend::kv_cache_write(float* k_cache, float* v_cache, const float* k, const float* v,
                                 const int32_t* slot, const int32_t* pos, int rows, int maxT,
                                 int Hkv, int D, backend::KvDtype dtype) {
  if (rows == 0) return;
  const int32_t* dev_slot = stage(4, slot, rows);
  const int32_t* dev_pos = stage(5, pos, rows);
  const size_t n = static_cast<size_t>(rows) * Hkv * D;
  const unsigned grid = kn::elementwise_blocks(n);
  if (dtype == backend::KvDtype::kBf16)
    kn::kv_cache_write<float, kn::bf16><<<grid, kn::kElementwiseThreads, 0, ctx_->compute()>>>(
        reinterpret_cast<kn::bf16*>(k_cache), reinterpret_cast<kn::bf16*>(v_cache), k, v,
        dev_slot, dev_pos, rows, maxT, Hkv, D);
  else
    kn::kv_cache_write<float><<<grid, kn::kElementwiseThreads, 0, ctx_->compute()>>>(
        k_cache, v_cache, k, v, dev_slot, dev_pos, rows, maxT, Hkv, D);
  check_launch();
}

void CudaBackend::attention_decode(float* out, const float* q, const float* k_cache,
                                   const float* v_cache, const int32_t* block_table,
                                   int max_blocks, const int32_t* len, int n, int block_size,
                                   int H, int Hkv, int D, backend::KvDtype dtype) {
  if (n == 0) return;
  LEAP_CHECK(D <= kn::kDecodeMaxD, "decode attention supports head_dim <= " << kn::kDecodeMaxD);
  const int32_t* dev_table = stage(2, block_table, static_cast<size_t>(n) * max_blocks);
  const int32_t* dev_len = stage(3, len, n);
  const unsigned grid = static_cast<unsigned>(n) * H;
  if (dtype == backend::KvDtype::kBf16)
    kn::attention_decode<float, kn::bf16><<<grid, kn::kDecodeThreads, 0, ctx_->compute()>>>(
        out, q, reinterpret_cast<const kn::bf16*>(k_cache),
        reinterpret_cast<const kn::bf16*>(v_cache), dev_table, max_blocks, dev_len, n,
        block_size, H, Hkv, D);
  else
    kn::attention_decode<float><<<grid, kn::kDecodeThreads, 0, ctx_->compute()>>>(
        out, q, k_cache, v_cache, dev_table, max_blocks, dev_len, n, block_size, H, Hkv, D);
  check_launch();
}

void CudaBackend::logprob_forward(float* logprobs, float* lse, const float* logits,
                                  const int32_t* targets, int N, int V, float inv_temp) {
  if (N == 0) return;
  const int32_t* dev_targets = stage(0, targets, N);
  kn::logprob_forward<float><<<N, kn::kLogprobThreads, 0, ctx_->compute()>>>(
      logprobs, lse, logits, dev_targets, N, V, inv_temp);
  check_launch();
}

void CudaBackend::logprob_backward(float* dlogits, const float* dlogprobs, const float* logits,
                                   const float* lse, const int32_t* targets, int N, int V,
                                   float inv_temp) {
  if (N == 0) return;
  const int32_t* dev_targets = stage(0, targets, N);
  dim3 grid(N, static_cast<unsigned>(kn::cdiv(V, kn::kLogprobBackwardChunk)));
  kn::logprob_backward<float><<<grid, kn::kLogprobThreads, 0, ctx_->compute()>>>(
      dlogits, dlogprobs, logits, lse, dev_targets, N, V, inv_temp);
  check_launch();
}

void CudaBackend::sample_rows(int32_t* ids, float* logprobs, const float* logits,
                              const double* uniforms, int N, int V, const backend::TokenRule& rule,
                              int sample_below) {
  if (N == 0) return;
  // One buffer: N doubles (uniforms), then N ints (ids) and N floats (log-probabilities).
  const size_t n = static_cast<size_t>(N);
  auto* dev_u = sampled_.reserve_as<double>(n + n);
  auto* dev_ids = reinterpret_cast<int32_t*>(dev_u + n);
  auto* dev_lp = reinterpret_cast<float*>(dev_ids + n);
  CUDA_CHECK(cudaMemcpyAsync(dev_u, uniforms, n * sizeof(double), cudaMemcpyHostToDevice,
                             ctx_->compute()));
  const int n_draw = sample_below > 0 && sample_below < V ? sample_below : V;
  kn::sample_rows<float><<<N, kn::kSampleThreads, 0, ctx_->compute()>>>(
      dev_ids, dev_lp, logits, dev_u, N, V, n_draw, rule.temperature, rule.top_k, rule.top_p);
  check_launch();
  CUDA_CHECK(cudaMemcpyAsync(ids, dev_ids, n * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             ctx_->compute()));
  CUDA_CHECK(cudaMemcpyAsync(logprobs, dev_lp, n * sizeof(float), cudaMemcpyDeviceToHost,
                             ctx_->compute()));
  CUDA_CHECK(cudaStreamSynchronize(ctx_->compute()));
  // A chosen token's log-probability is finite unless its row is not (the kernel does not stop
  // on NaN logits: it records NaN and picks a token anyway), as the host rule checks.
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(logprobs[i])) backend::fail_on_non_finite_logits(V);
}

}  // namespace leap::cuda
