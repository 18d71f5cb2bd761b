// Shared by the verification and worker tests: small tasks built in code (out = relu(x) * alpha
// over n elements, with ragged CPU sizes, and an in-place axpy) and answers for them.
#pragma once

#include <string>

#include "sandbox/nvrtc_compiler.h"
#include "tasks/task.h"

namespace leap::sandbox::testing {

// y = alpha * x + y in place (an `inout` buffer), at n_gpu for the GPU sizes and 300 for the CPU's.
inline tasks::Task axpy_task(int64_t n_gpu) {
  tasks::Task t;
  t.id = "T/axpy";
  t.params = {{"n", n_gpu}, {"alpha", 0.5}};
  t.cpu_params = {{"n", int64_t{300}}, {"alpha", 0.5}};
  t.buffers = {{"x", tasks::DType::kF32, {"n"}, tasks::Role::kIn, {}},
               {"y", tasks::DType::kF32, {"n"}, tasks::Role::kInOut, {}}};
  return t;
}

inline tasks::Task relu_scale_task() {
  tasks::Task t;
  t.id = "T/relu_scale";
  t.params = {{"n", int64_t{1 << 20}}, {"alpha", 1.5}};
  t.cpu_params = {{"n", int64_t{1000}}, {"alpha", 1.5}};  // not a multiple of 256
  t.buffers = {{"x", tasks::DType::kF32, {"n"}, tasks::Role::kIn, {}},
               {"out", tasks::DType::kF32, {"n"}, tasks::Role::kOut, {}}};
  t.reference = R"(```cuda
__global__ void ref(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
}
// launch: ref<<<cdiv(n, 128), 128>>>(x, out, alpha, n)
```)";
  t.atol = 1e-5;
  t.rtol = 1e-5;
  return t;
}

// A completion holding `body` (kernel code) and `launch` lines in a ```cuda block.
inline std::string answer(const std::string& body, const std::string& lines) {
  return "Here is my kernel.\n```cuda\n" + body + "\n" + lines + "```\n";
}

inline const char* kGoodKernel =
    R"(__global__ void k(const float* __restrict__ x, float* __restrict__ out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
})";
inline const char* kGoodLaunch = "// launch: k<<<cdiv(n, 256), 256>>>(x, out, alpha, n)\n";

}  // namespace leap::sandbox::testing

// Tests that compile kernels skip in builds without NVRTC (LEAP_CUDA=OFF).
#define LEAP_SKIP_WITHOUT_NVRTC() \
  if (!::leap::sandbox::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC"
