// The job runner's timed runs, without a GPU: the PTX interpreter behind an executor that times
// by the wall clock (warm-ups, then repeats, each after `prepare`, as the GPU executor does).
// A kernel that computes only on its first launches and returns at once while it is timed must
// get WRONG_ANSWER, not a speedup; an honest kernel that updates an `inout` buffer in place
// must pass, which needs every timed run to start from the staged buffers.
#include <gtest/gtest.h>

#include <chrono>

#include "sandbox/verifier.h"
#include "verify_fixture.h"
#include "wall_clock_executor.h"

namespace leap::sandbox {
namespace {

using testing::answer;
using testing::WallClockExecutor;

// One warm-up and three timed runs: the candidate's plan runs as launch 1 (trial 0), 2 to 5
// (timing), then 6 and 7 (trials 1 and 2).
VerifyResult verify(const tasks::Task& task, const std::string& completion) {
  return testing::verify_timed(task, completion);
}

tasks::Task small(tasks::Task t) {
  t.params["n"] = int64_t{700};  // the "GPU" sizes, small enough for the interpreter
  return t;
}

// relu_scale's kernel behind a launch counter (a `__device__` int a first kernel bumps before each
// run of the plan): it returns without computing on the launches where `skip_if` holds.
std::string counting_cheat(const std::string& skip_if) {
  return answer("__device__ int launches;\n"
                "__global__ void count() { launches += 1; }\n"
                "__global__ void k(const float* x, float* out, float alpha, int n) {\n"
                "  if (" + skip_if + ") return;\n"
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;\n"
                "}",
                "// launch: count<<<1, 1>>>()\n"
                "// launch: k<<<cdiv(n, 256), 256>>>(x, out, alpha, n)\n");
}

TEST(VerifyTimedRuns, AKernelThatSkipsItsWorkWhileTimedIsWrong) {
  LEAP_SKIP_WITHOUT_NVRTC();
  const tasks::Task task = small(testing::relu_scale_task());
  // Computes on its first launch and after the timing, returns at once while it is timed.
  const std::string cheat = counting_cheat("launches >= 2 && launches <= 5");
  VerifyResult r = verify(task, cheat);
  EXPECT_EQ(verdict_name(r.verdict), "WRONG_ANSWER") << r.feedback;
  EXPECT_NE(r.feedback.find("a timed run"), std::string::npos) << r.feedback;
  EXPECT_FALSE(r.speedup.has_value());

  VerifyResult honest = verify(task, answer(testing::kGoodKernel, testing::kGoodLaunch));
  EXPECT_EQ(verdict_name(honest.verdict), "OK") << honest.feedback;
  EXPECT_TRUE(honest.speedup.has_value()) << honest.feedback;
}

// A kernel that computes on every run but the last timed one: the sampled run (one of the timed
// runs, drawn by the clock) may miss it, the last run's read-back does not. Repeated, since the
// draw would catch it one time in three.
TEST(VerifyTimedRuns, TheLastTimedRunIsCheckedWhateverWasSampled) {
  LEAP_SKIP_WITHOUT_NVRTC();
  const tasks::Task task = small(testing::relu_scale_task());
  const std::string cheat = counting_cheat("launches == 5");
  for (int i = 0; i < 4; ++i) {
    VerifyResult r = verify(task, cheat);
    EXPECT_EQ(verdict_name(r.verdict), "WRONG_ANSWER") << r.feedback;
    EXPECT_NE(r.feedback.find("a timed run"), std::string::npos) << r.feedback;
  }
}

TEST(VerifyTimedRuns, AnInoutBufferStartsEachTimedRunAsStaged) {
  LEAP_SKIP_WITHOUT_NVRTC();
  tasks::Task t = testing::axpy_task(700);
  const char* body = R"(__global__ void k(const float* x, float* y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
})";
  t.reference = "```cuda\n" + std::string(body) +
                "\n// launch: k<<<cdiv(n, 128), 128>>>(x, y, alpha, n)\n```";
  t.atol = 1e-5;
  t.rtol = 1e-5;
  // Without the staged state restored, y would grow by alpha * x in each of the five runs.
  VerifyResult r = verify(t, answer(body, "// launch: k<<<cdiv(n, 256), 256>>>(x, y, alpha, n)\n"));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
  EXPECT_TRUE(r.speedup.has_value()) << r.feedback;
}

// The job's deadline for waits on the device: half the run timeout after the candidate compiled,
// set before any run (so a wait behind another job's hung kernel ends as SANDBOX_ERROR first).
TEST(VerifyTimedRuns, RunsMayWaitForTheDeviceHalfTheRunTimeout) {
  LEAP_SKIP_WITHOUT_NVRTC();
  WallClockExecutor ex;
  JobRunner runner(ex, TimingOptions{1, 3, 0.0, 3});
  runner.set_run_timeout(10);
  std::chrono::steady_clock::time_point compiled;
  runner.set_compiled_callback([&] { compiled = std::chrono::steady_clock::now(); });
  JobRequest req;
  req.task = small(testing::relu_scale_task());
  req.code = std::string(testing::kGoodKernel) + "\n" + testing::kGoodLaunch;
  TrialSpec t;
  t.sizes = tasks::SizeSet::kCpu;
  req.trials = {t};
  const JobReport r = runner.run(req);
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  const double after_compile_s = std::chrono::duration<double>(ex.deadline - compiled).count();
  EXPECT_GT(after_compile_s, 4.9);
  EXPECT_LT(after_compile_s, 5.5);
}

// A plan that stops at a later line (here one whose arguments do not match its kernel) still
// synchronizes the kernels it launched: a GPU's executor holds the device until then, and a
// worker idling after such a job would hold every other worker's timing.
TEST(VerifyTimedRuns, APlanThatStopsAtALaterLineSynchronizesWhatItLaunched) {
  LEAP_SKIP_WITHOUT_NVRTC();
  const char* body = R"(__global__ void first(float* out, int n) { if (threadIdx.x == 0) out[0] = 0.f; }
__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
})";
  {
    const char* second = "// launch: k<<<1, 1>>>(x, out, n)\n";
    WallClockExecutor ex;
    JobRunner runner(ex, TimingOptions{1, 3, 0.0, 3});
    JobRequest req;
    req.task = small(testing::relu_scale_task());
    req.code = std::string(body) + "\n// launch: first<<<1, 32>>>(out, n)\n" + second;
    TrialSpec t;
    t.sizes = tasks::SizeSet::kGpu;
    req.trials = {t};
    req.time = true;
    const JobReport r = runner.run(req);
    EXPECT_EQ(verdict_name(r.outcome.verdict), "LAUNCH_ERROR") << second << r.outcome.message;
    EXPECT_NE(r.outcome.message.find("takes 4 parameters but the launch line passes 3"), std::string::npos)
        << r.outcome.message;
    EXPECT_EQ(ex.unsynchronized, 0) << second;
  }
}

}  // namespace
}  // namespace leap::sandbox
