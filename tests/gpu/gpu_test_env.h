// The GPU tests' fixture: a CUDA context on device 0, or a clean skip (GTEST_SKIP) where no
// device exists, so the whole suite passes on machines without a GPU. ctest marks these tests
// skipped (SKIP_REGULAR_EXPRESSION on GoogleTest's "[  SKIPPED ]").
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/rng.h"
#include "cuda/cuda_context.h"

namespace leap::cuda {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctx = CudaContext::create(0, size_t{32} << 20);
    if (!ctx) GTEST_SKIP() << "no CUDA device: " << ctx.status().message();
    ctx_ = std::move(*ctx);
  }
  std::unique_ptr<CudaContext> ctx_;
};

inline std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
}

// ||a - b|| / ||b||, the normalised error the backend comparisons use (ggml's test-backend-ops).
inline double normalised_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace leap::cuda
