// The kernel corpus: varied hand-written CUDA kernels compiled with NVRTC to PTX, run in the
// interpreter and checked against plain C++ references. Each kernel exercises a family of PTX
// the policy's answers and the task references produce (grid-stride loops, shared-memory
// tiling, warp shuffles, templates, float4, half/bfloat16, dynamic shared memory, atomics,
// multi-launch plans, device function calls, ragged sizes).
#include <cmath>

#include "common/rng.h"
#include "ptx_test_util.h"

namespace leap::sandbox::ptx {
namespace {

using testing::Args;
using testing::compile;
using testing::dims;
using testing::download;
using testing::upload;

std::vector<float> normal(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

class PtxCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  NvrtcCompiler compiler_;
  GlobalMemory mem_;
};

TEST_F(PtxCorpus, ElementwiseReluMulWithRaggedSize) {
  auto c = compile(compiler_, R"(
__global__ void relu_mul(const float* __restrict__ a, const float* __restrict__ b,
                         float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i], 0.f) * b[i];
}
)", {"relu_mul"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 4099;
  auto a = normal(n, 1), b = normal(n, 2);
  uint64_t da = upload(mem_, a), db = upload(mem_, b), dout = upload(mem_, std::vector<float>(n, NAN));
  auto r = launch(*c.module, c.name("relu_mul"), dims((n + 255) / 256, 256),
                  Args().ptr(da).ptr(db).ptr(dout).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<float>(mem_, dout, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], std::max(a[i], 0.f) * b[i]) << i;
  EXPECT_GT(r.instructions, static_cast<uint64_t>(n) * 5);
}

}  // namespace
}  // namespace leap::sandbox::ptx
