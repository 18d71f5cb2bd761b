// Compiles every kernel header of cuda/kernels with nvcc and instantiates each kernel for the
// storage types (fp32, bf16) and the head dims the backend dispatches on, so CI catches code
// that NVRTC accepts and nvcc does not (and the reverse is caught by test_cuda_kernels).
#include "cuda/kernels/adamw.cuh"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/attention_decode.cuh"
#include "cuda/kernels/attention_wide.cuh"
#include "cuda/kernels/cast.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/gemm_empty.cuh"
#include "cuda/kernels/logprob.cuh"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/sample.cuh"
#include "cuda/kernels/residual.cuh"
#include "cuda/kernels/rmsnorm.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/swiglu.cuh"

namespace leap::cuda::kernels {

#define LEAP_INSTANTIATE_STORAGE(S)                                                               \
  template __global__ void cast_from_f32<S>(S*, const float*, u64);                               \
  template __global__ void cast_to_f32<S>(float*, const S*, u64);                                 \
  template __global__ void add_forward<S>(S*, const S*, const S*, u64);                           \
  template __global__ void swiglu_forward<S>(S*, const S*, int, int);                             \
  template __global__ void swiglu_backward<S>(S*, const S*, const S*, int, int);                  \
  template __global__ void rope_forward<S>(S*, const S*, const float*, const float*, const int*,  \
                                           int, int, int);                                        \
  template __global__ void rope_backward<S>(S*, const S*, const float*, const float*, const int*, \
                                            int, int, int);                                       \
  template __global__ void embedding_forward<S>(S*, const int*, const S*, int, int);              \
  template __global__ void embedding_backward<S>(float*, const S*, const int*, const int*,        \
                                                 const int*, int);                                \
  template __global__ void rmsnorm_forward<S>(S*, float*, const S*, const S*, int, int, float);   \
  template __global__ void rmsnorm_backward<S>(S*, const S*, const S*, const S*, const float*,    \
                                               int, int);                                         \
  template __global__ void rmsnorm_backward_dweight_partial<S>(float*, const S*, const S*,       \
                                                               const float*, int, int, int);      \
  template __global__ void adamw_update<S>(float*, float*, float*, const float*, S*, u64, float,  \
                                           float, float, float, float, float, int);               \
  template __global__ void sum_squares_partial<S>(double*, const S*, u64);                        \
  template __global__ void logprob_forward<S>(float*, float*, const S*, const int*, int, int,     \
                                              float);                                             \
  template __global__ void logprob_backward<S>(S*, const float*, const S*, const float*,          \
                                               const int*, int, int, float);                      \
  template __global__ void logprob_chunk_forward<S>(float*, float*, float*, const S*, const int*, \
                                                    int, int, int, int, int, float);              \
  template __global__ void logprob_chunk_backward<S>(S*, const float*, const S*, const float*,    \
                                                     const int*, int, int, int, int, float);      \
  template __global__ void sample_rows<S>(int*, float*, const S*, const double*, int, int, int,   \
                                          double, int, double);                                   \
  template __global__ void kv_cache_write<S>(S*, S*, const S*, const S*, const int*, const int*,  \
                                             int, int, int, int);                                 \
  template __global__ void attention_decode<S>(S*, const S*, const S*, const S*, const int*, int, \
                                               const int*, int, int, int, int, int);              \
  template __global__ void attention_backward_delta<S>(float*, const S*, const S*, int, int, int, \
                                                       int);

#define LEAP_INSTANTIATE_ATTENTION(S, D)                                                          \
  template __global__ void attention_forward<S, D>(S*, float*, const S*, const S*, const S*, int, \
                                                   int, int, int);                                \
  template __global__ void attention_backward_dkdv<S, D>(S*, S*, const S*, const float*,          \
                                                         const float*, const S*, const S*,        \
                                                         const S*, int, int, int, int);           \
  template __global__ void attention_backward_dq<S, D>(                                           \
      S*, const S*, const float*, const float*, const S*, const S*, const S*, int, int, int, int);

#define LEAP_INSTANTIATE_ATTENTION_WIDE(S, D)                                                     \
  template __global__ void attention_forward_wide<S, D>(S*, float*, const S*, const S*, const S*, \
                                                        int, int, int, int);                      \
  template __global__ void attention_backward_dkdv_wide<S, D>(S*, S*, const S*, const float*,     \
                                                              const float*, const S*, const S*,   \
                                                              const S*, int, int, int, int);      \
  template __global__ void attention_backward_dq_wide<S, D>(                                      \
      S*, const S*, const float*, const float*, const S*, const S*, const S*, int, int, int, int);

LEAP_INSTANTIATE_STORAGE(float)
LEAP_INSTANTIATE_STORAGE(bf16)
template __global__ void sum_squares_finish<double>(double*, const double*, int);
template __global__ void gemm_empty_epilogue<float>(float*, const float*, int, int, int, float);
// The bf16 table of a model whose matrices are kept in bf16 only, looked up into fp32 rows.
template __global__ void embedding_forward<float, bf16>(float*, const int*, const bf16*, int, int);
LEAP_INSTANTIATE_ATTENTION(float, 8)
LEAP_INSTANTIATE_ATTENTION(bf16, 8)
LEAP_INSTANTIATE_ATTENTION(float, 64)
LEAP_INSTANTIATE_ATTENTION(bf16, 64)
LEAP_INSTANTIATE_ATTENTION(bf16, 128)
LEAP_INSTANTIATE_ATTENTION_WIDE(float, 64)
LEAP_INSTANTIATE_ATTENTION_WIDE(bf16, 128)
// The sampler's bf16 KV cache beside fp32 activations (CudaBackend, KvDtype::kBf16).
template __global__ void kv_cache_write<float, bf16>(bf16*, bf16*, const float*, const float*,
                                                     const int*, const int*, int, int, int, int);
template __global__ void attention_decode<float, bf16>(float*, const float*, const bf16*,
                                                       const bf16*, const int*, int, const int*,
                                                       int, int, int, int, int);

}  // namespace leap::cuda::kernels
