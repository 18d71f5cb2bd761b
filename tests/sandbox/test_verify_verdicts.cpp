// Every verdict reached by an answer written to reach it, through the real pipeline (parse,
// plan, NVRTC, the PTX interpreter, comparison against the reference), in this process.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>

#include <memory>

#include "sandbox/cpu_executor.h"
#include "sandbox/verifier.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

using testing::answer;
using testing::kGoodKernel;
using testing::kGoodLaunch;

class VerifyVerdicts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CpuExecutorOptions o;
    o.instruction_budget = 20'000'000;  // an endless loop ends fast and deterministically
    channel_ =
        new LocalChannel(std::make_unique<CpuExecutor>(std::make_shared<NvrtcCompiler>(), o));
  }
  static void TearDownTestSuite() {
    delete channel_;
    channel_ = nullptr;
  }
  static SandboxConfig cpu_config() {
    SandboxConfig config;
    config.device = "cpu";
    return config;
  }
  VerifyResult verify(const std::string& completion) {
    Verifier v(*channel_, cpu_config());
    return v.verify(task_, completion);
  }
  void expect(const std::string& completion, Verdict want, const std::string& feedback_part) {
    VerifyResult r = verify(completion);
    EXPECT_EQ(verdict_name(r.verdict), verdict_name(want)) << r.feedback;
    EXPECT_NE(r.feedback.find(feedback_part), std::string::npos) << r.feedback;
    EXPECT_LE(r.feedback.size(), 2048u);
  }
  static LocalChannel* channel_;
  tasks::Task task_ = testing::relu_scale_task();
};
LocalChannel* VerifyVerdicts::channel_ = nullptr;

TEST_F(VerifyVerdicts, CorrectAnswerPasses) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
  EXPECT_LE(r.max_abs_err, 1e-6);
  EXPECT_FALSE(r.speedup.has_value());
  EXPECT_GT(r.compile_ms + r.exec_ms, 0.0);
}

// The first verification of a task runs its reference (the outputs are then cached), later ones
// do not, nor does a repeated answer judged from the verdict cache; a verifier without room for
// the outputs runs it every time (what leap train's summary counts).
TEST_F(VerifyVerdicts, TheReferenceRunsOnceWhileItsOutputsAreCached) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.device = "cpu";
  Verifier v(*channel_, config);
  const std::string good = answer(kGoodKernel, kGoodLaunch);
  const std::string other = answer(std::string(kGoodKernel) + "\n// another answer\n", kGoodLaunch);
  EXPECT_TRUE(v.verify(task_, good).reference_ran);
  EXPECT_FALSE(v.verify(task_, good).reference_ran) << "a repeated answer";
  EXPECT_FALSE(v.verify(task_, other).reference_ran);
  config.reference_cache_mb = 0;
  Verifier no_room(*channel_, config);
  EXPECT_TRUE(no_room.verify(task_, good).reference_ran);
  EXPECT_TRUE(no_room.verify(task_, other).reference_ran);
}

// Four different answers to one task verified at once, as a group's samples reach a sandbox
// rank's slots together: the reference runs once, and the others wait for its outputs (before,
// every verification that missed the cache ran it).
TEST_F(VerifyVerdicts, ConcurrentVerificationsOfATaskRunItsReferenceOnce) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.device = "cpu";
  Verifier v(*channel_, config);
  std::vector<std::future<VerifyResult>> results;
  for (int i = 0; i < 4; ++i)
    results.push_back(std::async(std::launch::async, [&, i] {
      return v.verify(task_, answer(std::string(kGoodKernel) + "\n// answer " + std::to_string(i) + "\n", kGoodLaunch));
    }));
  int ran = 0;
  for (auto& f : results) {
    const VerifyResult r = f.get();
    EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
    ran += r.reference_ran;
  }
  EXPECT_EQ(ran, 1);
}

TEST_F(VerifyVerdicts, TemplateKernelsAndMultiLaunchPlansWithScratch) {
  LEAP_SKIP_WITHOUT_NVRTC();
  // Pass 1 (a template instance) writes relu(x) to a scratch buffer; pass 2 scales it into out.
  VerifyResult r = verify(answer(R"(template <int B>
__global__ void relu_to(const float* x, float* tmp, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) tmp[i] = fmaxf(x[i], 0.f);
}
__global__ void scale(const float* tmp, float* out, float alpha, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = tmp[i] * alpha;
})",
                                 "// scratch: tmp f32[n]\n"
                                 "// launch: relu_to<128><<<cdiv(n, 128), 128>>>(x, tmp, n)\n"
                                 "// launch: scale<<<3, 64>>>(tmp, out, alpha, n)\n"));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
}

TEST_F(VerifyVerdicts, NoCodeBlockIsFormatError) {  // rejected before any compile
  expect("I would write a kernel that applies relu.", Verdict::kFormatError,
         "no ```cuda code block");
}

TEST_F(VerifyVerdicts, SyntaxErrorIsCompileError) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(
      answer("__global__ void k(const float* x, float* out, float alpha, int n) { out[0] = x[0] }",
             kGoodLaunch),
      Verdict::kCompileError, "error");
}

TEST_F(VerifyVerdicts, CallingAHostFunctionIsCompileError) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(std::string("float host_relu(float v) { return v > 0 ? v : 0; }\n") +
                    "__global__ void k(const float* x, float* out, float alpha, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) out[i] = host_relu(x[i]) * alpha;\n}",
                kGoodLaunch),
         Verdict::kCompileError, "host_relu");
}

TEST_F(VerifyVerdicts, HostRuntimeCallIsFormatError) {  // rejected before any compile
  expect(
      answer(std::string(kGoodKernel) + "\nvoid run(float* d) { cudaMalloc(&d, 4); }", kGoodLaunch),
      Verdict::kFormatError, "cudaMalloc");
}

TEST_F(VerifyVerdicts, BadLaunchLines) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(kGoodKernel, "// launch: k<<<cdiv(n, 256)>>>(x, out, alpha, n)\n"),
         Verdict::kFormatError, "takes GRID, BLOCK");
  expect(answer(kGoodKernel, "// launch: kk<<<cdiv(n, 256), 256>>>(x, out, alpha, n)\n"),
         Verdict::kLaunchError, "no __global__ kernel 'kk'; it declares 'k'");
  expect(answer(std::string("__device__ float twice(float v) { return 2 * v; }\n") + kGoodKernel,
                "// launch: twice<<<cdiv(n, 256), 256>>>(x, out, alpha, n)\n"),
         Verdict::kLaunchError,
         "'twice' is a __device__ function, not a __global__ kernel; it declares 'k'");
  expect(answer(kGoodKernel, "// launch: k<<<cdiv(n, 256), 256>>>(x, out, n)\n"),
         Verdict::kLaunchError, "takes 4 parameters but the launch line passes 3");
  expect(answer(kGoodKernel, "// launch: k<<<cdiv(n, 256), 256>>>(x, out, alpha, y)\n"),
         Verdict::kLaunchError, "argument 'y'");
}

TEST_F(VerifyVerdicts, LimitsAreLaunchErrors) {  // rejected before any compile
  expect(answer(kGoodKernel, "// launch: k<<<cdiv(n, 2048), 2048>>>(x, out, alpha, n)\n"),
         Verdict::kLaunchError, "block.x = 2048");
  expect(answer(kGoodKernel, "// scratch: huge f32[n * n * n]\n" + std::string(kGoodLaunch)),
         Verdict::kLaunchError, "scratch limit");
  expect(answer(kGoodKernel, "// launch: k<<<cdiv(n, 256), 256, 100000>>>(x, out, alpha, n)\n"),
         Verdict::kLaunchError, "dynamic shared memory");
}

TEST_F(VerifyVerdicts, OutOfBoundsWriteIsMemoryViolation) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = (i < n ? fmaxf(x[i], 0.f) : 0.f) * alpha;
})",
                kGoodLaunch),
         Verdict::kMemoryViolation, "");
}

TEST_F(VerifyVerdicts, FeedbackDoesNotDependOnEarlierJobs) {
  LEAP_SKIP_WITHOUT_NVRTC();
  // The feedback of a memory violation quotes device addresses. The policy reads it in its next
  // prompt, so it must be the same whatever the worker verified before, or one seed would give
  // different runs depending on which worker pulled which job.
  const std::string oob = answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = (i < n ? fmaxf(x[i], 0.f) : 0.f) * alpha;
})",
                                 kGoodLaunch);
  SandboxConfig config;
  config.device = "cpu";
  config.result_cache_entries = 0;  // every verify below really runs
  Verifier v(*channel_, config);
  const VerifyResult first = v.verify(task_, oob);
  ASSERT_EQ(verdict_name(first.verdict), "MEMORY_VIOLATION") << first.feedback;
  ASSERT_NE(first.feedback.find("0x"), std::string::npos) << first.feedback;
  ASSERT_EQ(verdict_name(v.verify(task_, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
  const VerifyResult again = v.verify(task_, oob);
  EXPECT_EQ(again.feedback, first.feedback);
}

TEST_F(VerifyVerdicts, OutOfBoundsReadIsMemoryViolation) {
  LEAP_SKIP_WITHOUT_NVRTC();
  // The last thread reads x[n], one past the end. (A load whose value only feeds a guarded
  // store would be moved under the guard by the compiler, so the value is used by every thread.)
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha + 0.f * x[i + 1];
})",
                kGoodLaunch),
         Verdict::kMemoryViolation, "");
}

TEST_F(VerifyVerdicts, EndlessLoopIsTimeout) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  volatile int spin = 1;
  while (spin) { }
  if (i < n) out[i] = x[i] * alpha;
})",
                kGoodLaunch),
         Verdict::kTimeout, "budget");
}

// PTX written through inline asm (which reaches the module as written): a second definition of
// the launched kernel, or an alignment that pads memory by gigabytes, is the answer's fault, a
// verdict that names it, never a crashed worker (SANDBOX_ERROR: a void sample, no penalty).
TEST_F(VerifyVerdicts, PtxInjectedThroughAsmIsRefusedWithAVerdict) {
  LEAP_SKIP_WITHOUT_NVRTC();
  const auto refused = [&](const std::string& kernel, const std::string& why) {
    VerifyResult r = verify(answer(kernel, kGoodLaunch));
    EXPECT_NE(verdict_name(r.verdict), "OK") << r.feedback;
    EXPECT_NE(verdict_name(r.verdict), "SANDBOX_ERROR") << r.feedback;
    EXPECT_NE(r.feedback.find(why), std::string::npos) << r.feedback;
  };
  refused(R"(extern "C" __global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
}
extern "C" __global__ void h() {
  asm volatile("}\n.entry k(.param .u64 a, .param .u64 b, .param .f32 c, .param .u32 d)\n{\nret;\n}\n.func pad()\n{");
})",
          "function k is defined twice");
  refused(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
  asm volatile("}\n.global .b8 leap_a[1];\n.global .align 4294967295 .b8 leap_b[1];\n.func leap_pad()\n{");
})",
          ".align 4294967295");
}

// The supervisor reads a worker's report only after checking it: a report for a candidate marked
// FORGE claims OK with no outputs, or names a trial that does not exist. Neither passes or
// crashes (a worker broken into through the interpreter could send either).
class ForgingChannel final : public JobChannel {
 public:
  explicit ForgingChannel(JobChannel& real) : real_(real) {}
  JobReport run(const JobRequest& request) override {
    JobReport r = real_.run(request);
    if (request.code.find("FORGE_OK") != std::string::npos) {
      r.outcome = {};
      r.outputs.clear();
    } else if (request.code.find("FORGE_TRIAL") != std::string::npos) {
      r.outcome = {Verdict::kLaunchError, "forged"};
      r.failed_trial = 99;
    }
    return r;
  }
  bool on_gpu() const override { return real_.on_gpu(); }

 private:
  JobChannel& real_;
};

TEST_F(VerifyVerdicts, AForgedWorkerReportNeitherPassesNorCrashes) {
  LEAP_SKIP_WITHOUT_NVRTC();
  ForgingChannel forging(*channel_);
  Verifier v(forging, cpu_config());
  const VerifyResult ok = v.verify(task_, answer(std::string(kGoodKernel) + "\n// FORGE_OK", kGoodLaunch));
  EXPECT_EQ(verdict_name(ok.verdict), "WRONG_ANSWER") << ok.feedback;
  EXPECT_NE(ok.feedback.find("trials' outputs"), std::string::npos) << ok.feedback;
  const VerifyResult trial = v.verify(task_, answer(std::string(kGoodKernel) + "\n// FORGE_TRIAL", kGoodLaunch));
  EXPECT_EQ(verdict_name(trial.verdict), "LAUNCH_ERROR") << trial.feedback;
  EXPECT_EQ(trial.feedback, "forged");
}

// A reference run that throws (the host out of memory, say) reaches its caller, and leaves no
// stale entry behind: the next candidate of the task runs the reference afresh instead of
// waiting on a promise nobody will keep (a broken_promise for every later candidate).
class ThrowOnceChannel final : public JobChannel {
 public:
  explicit ThrowOnceChannel(JobChannel& real) : real_(real) {}
  JobReport run(const JobRequest& request) override {
    if (!thrown_.exchange(true)) throw std::runtime_error("the reference run failed");
    return real_.run(request);
  }
  bool on_gpu() const override { return real_.on_gpu(); }

 private:
  JobChannel& real_;
  std::atomic<bool> thrown_{false};
};

TEST_F(VerifyVerdicts, AReferenceRunThatThrowsLeavesNoStaleEntry) {
  LEAP_SKIP_WITHOUT_NVRTC();
  ThrowOnceChannel once(*channel_);
  Verifier v(once, cpu_config());
  EXPECT_THROW(v.verify(task_, answer(kGoodKernel, kGoodLaunch)), std::runtime_error);
  const VerifyResult r = v.verify(task_, answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
}

TEST_F(VerifyVerdicts, MissingBarrierIsRuntimeError) {
  LEAP_SKIP_WITHOUT_NVRTC();
  // Threads read a neighbour's shared-memory slot with no __syncthreads() after the writes.
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.f;
  float v = s[255 - threadIdx.x];
  if (i < n) out[i] = fmaxf(s[threadIdx.x], 0.f) * alpha + 0.f * v;
})",
                kGoodLaunch),
         Verdict::kRuntimeError, "__syncthreads");
}

TEST_F(VerifyVerdicts, WritingNothingIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(
      answer("__global__ void k(const float* x, float* out, float alpha, int n) { }", kGoodLaunch),
      Verdict::kWrongAnswer, "never written");
}

// Integer outputs are poisoned with a value no task's output takes: with -1 (0xFF bytes), a kernel
// that leaves the elements whose answer is -1 unwritten passed.
TEST_F(VerifyVerdicts, AnIntegerOutputLeftUnwrittenWhereItIsMinusOneIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  tasks::Task t;
  t.id = "T/positive_or_minus_one";
  t.params = t.cpu_params = {{"n", int64_t{1000}}};
  t.buffers = {{"x", tasks::DType::kI32, {"n"}, tasks::Role::kIn, {tasks::Init::Kind::kRandint, -9, 9}},
               {"out", tasks::DType::kI32, {"n"}, tasks::Role::kOut, {}}};
  t.reference = R"(```cuda
__global__ void ref(const int* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] > 0 ? x[i] : -1;
}
// launch: ref<<<cdiv(n, 128), 128>>>(x, out, n)
```)";
  t.atol = t.rtol = 0;
  const char* launch = "// launch: k<<<cdiv(n, 256), 256>>>(x, out, n)\n";
  Verifier v(*channel_, cpu_config());
  VerifyResult lazy = v.verify(t, answer(R"(__global__ void k(const int* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0) out[i] = x[i];
})", launch));
  EXPECT_EQ(verdict_name(lazy.verdict), "WRONG_ANSWER") << lazy.feedback;
  VerifyResult honest = v.verify(t, answer(R"(__global__ void k(const int* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] > 0 ? x[i] : -1;
})", launch));
  EXPECT_EQ(verdict_name(honest.verdict), "OK") << honest.feedback;
}

TEST_F(VerifyVerdicts, WritingHalfTheOutputIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) out[i] = fmaxf(x[i], 0.f) * alpha;
})",
                kGoodLaunch),
         Verdict::kWrongAnswer, "first at index 500");
}

TEST_F(VerifyVerdicts, ModifyingAnInputIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(R"(__global__ void k(float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { x[i] = fmaxf(x[i], 0.f); out[i] = x[i] * alpha; }
})",
                kGoodLaunch),
         Verdict::kWrongAnswer, "modified input buffer 'x'");
}

TEST_F(VerifyVerdicts, WrongFormulaIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  expect(answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.f) + alpha;
})",
                kGoodLaunch),
         Verdict::kWrongAnswer, "max abs error");
}

TEST_F(VerifyVerdicts, CorrectOnlyForMultiplesOfTheBlockSizeIsWrongAnswer) {
  LEAP_SKIP_WITHOUT_NVRTC();
  // n / 256 blocks: the last 1000 - 768 elements are never written at the ragged CPU size.
  expect(answer(kGoodKernel, "// launch: k<<<n / 256, 256>>>(x, out, alpha, n)\n"),
         Verdict::kWrongAnswer, "first at index 768");
}

TEST_F(VerifyVerdicts, ReferenceOutputsAndResultsAreCached) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  Verifier v(*channel_, config);
  ASSERT_EQ(verdict_name(v.verify(task_, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
  const uint64_t misses = v.reference_cache().misses();
  EXPECT_EQ(misses, static_cast<uint64_t>(config.trials));
  // Another answer: it runs, and the reference outputs come from the cache.
  VerifyResult other = v.verify(task_, answer(std::string(kGoodKernel) + "  // v2", kGoodLaunch));
  ASSERT_EQ(verdict_name(other.verdict), "OK");
  EXPECT_EQ(v.reference_cache().misses(), misses);
  EXPECT_EQ(v.reference_cache().hits(), static_cast<uint64_t>(config.trials));
  // The same answer again: judged from the result cache, with nothing run for it.
  EXPECT_EQ(v.result_cache().hits(), 0u);
  VerifyResult again = v.verify(task_, answer(std::string(kGoodKernel) + "  // v2", kGoodLaunch));
  EXPECT_EQ(verdict_name(again.verdict), "OK");
  EXPECT_EQ(again.feedback, other.feedback);
  EXPECT_EQ(again.exec_ms, 0.0);
  EXPECT_EQ(v.result_cache().hits(), 1u);
  EXPECT_EQ(v.reference_cache().hits(), static_cast<uint64_t>(config.trials));
  // A wrong answer is cached as wrong; nothing is cached with the cache turned off.
  config.result_cache_entries = 0;
  Verifier off(*channel_, config);
  off.verify(task_, answer(kGoodKernel, kGoodLaunch));
  off.verify(task_, answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(off.result_cache().hits(), 0u);
}

}  // namespace
}  // namespace leap::sandbox
