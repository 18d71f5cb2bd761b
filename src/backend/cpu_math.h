// exp for the CPU backend's inner loops (softmax, sigmoid, log-softmax). libm's expf is a
// scalar call that blocks vectorisation and dominated the non-GEMM time; this one is branch-
// free plain C++ (Cephes' expf: Cody-Waite reduction and a degree-5 polynomial), so loops
// using it vectorise. Relative error <= 2e-7 on [-87.3, 88.7]; inputs are clamped to that range
// (exp(-87.3) ~ 1e-38 stands in for smaller results, far below what a softmax sum can see).
#pragma once

#include <bit>
#include <cstdint>

namespace leap::backend {

inline float exp_fast(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.7f ? 88.7f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (exact for |n| < 2^22, vectorises without SSE4).
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  return e * std::bit_cast<float>(bits);
}

}  // namespace leap::backend
