// `leap_gpu_check gemm`: cuBLASLt bf16 GEMM throughput through the CUDA backend's matmuls, on
// the shapes of the ~124M benchmark model's layers (N = B*T tokens). Figures are TFLOP/s of
// 2*N*IC*OC per product (forward; backward = both products), timed with CUDA events after a
// warm-up, median of the repeats. The operand casts to bf16 are included: they are part of
// what a matmul costs behind the fp32 interface. Operands are random: tensor cores run faster
// on zeros (less switching), so zero-filled buffers would flatter the figures.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/rng.h"
#include "cuda/check/checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"

namespace leap::cuda::check {

namespace {

// Median milliseconds of `reps` runs of f on the compute stream.
template <class F>
double median_ms(CudaContext& ctx, int reps, F&& f) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  f();  // warm-up (and the plan's heuristic)
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    CUDA_CHECK(cudaEventRecord(a, ctx.compute()));
    f();
    CUDA_CHECK(cudaEventRecord(b, ctx.compute()));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

Expected<JsonRecord> run_gemm(const CheckArgs& args) {
  LEAP_ASSIGN_OR_RETURN(long long tokens, args.integer("tokens"));
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, size_t{32} << 20));
  CudaBackend be(*ctx);
  const int N = static_cast<int>(tokens);
  struct Shape {
    const char* name;
    int IC, OC;
  };
  const Shape shapes[] = {{"qkv_768x2304", 768, 2304},
                          {"o_768x768", 768, 768},
                          {"gate_up_768x4096", 768, 4096},
                          {"down_2048x768", 2048, 768},
                          {"lm_head_768x50304", 768, 50304}};
  JsonRecord r;
  r.set("tokens", tokens);
  // One host vector of uniform values in [-1, 1), large enough for every operand; each operand
  // is uploaded from its own offset so no two are equal.
  size_t most = 0;
  for (const auto& s : shapes)
    most = std::max({most, static_cast<size_t>(N) * s.IC, static_cast<size_t>(s.OC) * s.IC});
  std::vector<float> noise(most + 4096);
  Rng rng(7);
  for (auto& v : noise) v = static_cast<float>(rng.next_u64() >> 40) / float(1 << 23) - 1.0f;
  auto random_floats = [&](size_t n, size_t offset) {
    float* p = be.alloc_floats(n);
    be.upload(p, noise.data() + offset, n);
    return p;
  };
  for (const auto& s : shapes) {
    float* x = random_floats(static_cast<size_t>(N) * s.IC, 0);
    float* w = random_floats(static_cast<size_t>(s.OC) * s.IC, 4096);
    float* y = be.alloc_floats(static_cast<size_t>(N) * s.OC);
    float* dx = be.alloc_floats(static_cast<size_t>(N) * s.IC);
    float* dw = be.alloc_floats(static_cast<size_t>(s.OC) * s.IC);
    const double flops = 2.0 * N * s.IC * s.OC;
    const double fwd =
        median_ms(*ctx, 20, [&] { be.matmul_forward(y, x, w, nullptr, N, s.IC, s.OC); });
    const double bwd =
        median_ms(*ctx, 20, [&] { be.matmul_backward(dx, dw, nullptr, y, x, w, N, s.IC, s.OC); });
    JsonRecord one;
    one.set("forward_ms", fwd)
        .set("forward_tflops", flops / fwd / 1e9)
        .set("backward_ms", bwd)
        .set("backward_tflops", 2 * flops / bwd / 1e9);
    std::fprintf(stderr,
                 "  %-20s N=%d forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s)\n",
                 s.name, N, fwd, flops / fwd / 1e9, bwd, 2 * flops / bwd / 1e9);
    r.set(s.name, one);
    for (float* p : {x, w, y, dx, dw}) be.free_floats(p);
  }
  r.set("plans_cached", static_cast<long long>(be.gemm().plans()));
  return r;
}

}  // namespace leap::cuda::check
