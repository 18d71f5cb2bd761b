// The GPU executor through the verifier (label `gpu`; skipped where no device is visible):
// a correct answer passes and is timed against the reference, the ragged CPU-size trial and the
// guard zones catch an unguarded tail write, a wrong answer is WRONG_ANSWER, every suite
// reference passes on the GPU, and GPU worker processes serve jobs.
#include <gtest/gtest.h>

#include <memory>

#include "cuda/device_probe.h"
#include "cuda/gpu_executor.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"
#include "tasks/suite.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

using testing::answer;
using testing::kGoodKernel;
using testing::kGoodLaunch;

bool have_gpu() {
  auto d = cuda::probe_devices();
  return d.has_value() && d->count > 0;
}

std::unique_ptr<LocalChannel> gpu_channel() {
  auto ex = cuda::make_gpu_executor(std::make_shared<NvrtcCompiler>());
  EXPECT_TRUE(ex.has_value()) << ex.status().message();
  return ex.has_value() ? std::make_unique<LocalChannel>(std::move(*ex)) : nullptr;
}

TEST(VerifyGpu, VerdictsAndTiming) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto channel = gpu_channel();
  ASSERT_TRUE(channel);
  ASSERT_TRUE(channel->on_gpu());
  SandboxConfig config;
  config.device = "gpu";
  Verifier v(*channel, config);
  auto task = testing::relu_scale_task();
  VerifyResult ok = v.verify(task, answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(verdict_name(ok.verdict), "OK") << ok.feedback;
  ASSERT_TRUE(ok.speedup.has_value()) << ok.feedback;
  EXPECT_GT(*ok.speedup, 0.2);
  EXPECT_LT(*ok.speedup, 5.0);
  VerifyResult wrong =
      v.verify(task, answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * alpha;
})",
                            kGoodLaunch));
  EXPECT_EQ(verdict_name(wrong.verdict), "WRONG_ANSWER") << wrong.feedback;
}

TEST(VerifyGpu, UnguardedTailWriteHitsTheGuardZone) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto channel = gpu_channel();
  ASSERT_TRUE(channel);
  SandboxConfig config;
  Verifier v(*channel, config);
  // Correct at the GPU size (a multiple of 256); at the CPU size it writes 24 elements past
  // the end of `out`, into its guard zone.
  VerifyResult r =
      v.verify(testing::relu_scale_task(),
               answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = (i < n ? fmaxf(x[i], 0.f) : 0.f) * alpha;
})",
                      kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "MEMORY_VIOLATION") << r.feedback;
  EXPECT_NE(r.feedback.find("past its end"), std::string::npos) << r.feedback;
}

TEST(VerifyGpu, EverySuiteReferencePasses) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto channel = gpu_channel();
  ASSERT_TRUE(channel);
  SandboxConfig config;
  Verifier v(*channel, config);
  for (const char* file : {"level1.jsonl", "level2.jsonl"}) {
    auto suite = tasks::load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/" + file);
    ASSERT_TRUE(suite.has_value()) << suite.status().message();
    for (const auto& task : suite->tasks) {
      VerifyResult r = v.verify(task, task.reference);
      EXPECT_EQ(verdict_name(r.verdict), "OK") << task.id << ": " << r.feedback;
      if (r.speedup)
        std::printf("%-28s speedup %.3f  %s\n", task.id.c_str(), *r.speedup, r.feedback.c_str());
    }
  }
}

TEST(VerifyGpu, GpuWorkerProcesses) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  WorkerPoolOptions o;
  o.leap_binary = std::string(LEAP_BINARY_DIR) + "/src/apps/leap";
  o.config.device = "gpu";
  auto pool = WorkerPool::start(o);
  ASSERT_TRUE(pool.has_value()) << pool.status().message();
  Verifier v(**pool, o.config);
  VerifyResult r = v.verify(testing::relu_scale_task(), answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
  EXPECT_TRUE(r.speedup.has_value());
}

}  // namespace
}  // namespace leap::sandbox
