// The worker pool with real `leap worker` processes: jobs verify through them, a runaway job is
// a TIMEOUT whose worker is replaced, a worker killed from outside mid-job (kill -9) is
// respawned and the job retried, a worker killed from outside on every attempt is a SANDBOX_ERROR
// (never the candidate's fault) while the same crash twice is the candidate's RUNTIME_ERROR, and
// the pool serves many threads at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "common/sanitizers.h"
#include "sandbox/sandbox_service.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

using testing::answer;
using testing::kGoodKernel;
using testing::kGoodLaunch;

// A correct kernel that takes a while on the interpreter: each thread loops `reps` times over an
// exact, idempotent step (max with its own input), so the result is bit-identical to the reference.
std::string slow_answer(int reps) {
  return answer(
      "__global__ void k(const float* x, float* out, float alpha, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i >= n) return;\n"
      "  float v = x[i];\n"
      "  for (int r = 0; r < " +
          std::to_string(reps) +
          "; ++r) v = fmaxf(v, x[i]);\n"
          "  out[i] = fmaxf(v, 0.f) * alpha;\n}",
      kGoodLaunch);
}

std::unique_ptr<WorkerPool> start_pool(SandboxConfig config,
                                       std::function<void(pid_t)> on_run_started = {}) {
  WorkerPoolOptions o;
  o.on_run_started = std::move(on_run_started);
  o.leap_binary = std::string(LEAP_BINARY_DIR) + "/src/apps/leap";
  config.device = "cpu";
  o.config = config;
  auto pool = WorkerPool::start(o);
  EXPECT_TRUE(pool.has_value()) << pool.status().message();
  return pool.has_value() ? std::move(*pool) : nullptr;
}

TEST(WorkersPool, VerifiesThroughWorkerProcesses) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  auto pool = start_pool(config);
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->worker_pids().size(), 2u);
  Verifier v(*pool, config);
  auto task = testing::relu_scale_task();
  EXPECT_EQ(verdict_name(v.verify(task, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
  EXPECT_EQ(
      verdict_name(
          v.verify(task, answer("__global__ void k(const float* x, float* out, float a, int n) {}",
                                kGoodLaunch))
              .verdict),
      "WRONG_ANSWER");
}

TEST(WorkersPool, RunawayJobTimesOutAndItsWorkerIsReplaced) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.workers = 1;
  config.run_timeout_s = 1.0;
  config.instruction_budget = int64_t{1} << 50;  // only the wall clock can stop it
  auto pool = start_pool(config);
  ASSERT_TRUE(pool);
  const pid_t before = pool->worker_pids().at(0);
  Verifier v(*pool, config);
  auto task = testing::relu_scale_task();
  VerifyResult r =
      v.verify(task, answer(R"(__global__ void k(const float* x, float* out, float alpha, int n) {
  volatile int spin = 1;
  while (spin) { }
})",
                            kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "TIMEOUT") << r.feedback;
  EXPECT_NE(r.feedback.find("longer than 1 s"), std::string::npos) << r.feedback;
  ASSERT_EQ(pool->worker_pids().size(), 1u);
  EXPECT_NE(pool->worker_pids().at(0), before);
  EXPECT_EQ(pool->stats().timeouts, 1u);
  // The replacement works.
  EXPECT_EQ(verdict_name(v.verify(task, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
}

// The kills below happen on an event, not after a sleep: the pool reports that a worker's job
// compiled and its run (about a second of interpreter time for slow_answer) starts, and the
// callback kills that worker there and then, so the job is always mid-run, however loaded the
// machine. The first verification of each test (a reference job, then the good kernel's) is left
// alone, so the slow candidate's attempts are runs 3 and 4.

TEST(WorkersPool, WorkerKilledMidJobIsRespawnedAndTheJobRetried) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.workers = 1;
  config.instruction_budget = int64_t{1} << 40;  // the slow answer runs about a second
  std::atomic<int> runs{0};
  std::atomic<pid_t> victim{-1};
  auto pool = start_pool(config, [&](pid_t worker) {
    if (++runs == 3) {  // the slow candidate's first attempt
      victim = worker;
      ::kill(worker, SIGKILL);
    }
  });
  ASSERT_TRUE(pool);
  Verifier v(*pool, config);
  auto task = testing::relu_scale_task();
  // Reference outputs first, so the next job is the candidate's alone.
  ASSERT_EQ(verdict_name(v.verify(task, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
  VerifyResult r = v.verify(task, slow_answer(2'000'000));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
  EXPECT_EQ(runs.load(), 4);  // reference, good kernel, killed attempt, retry
  EXPECT_EQ(pool->stats().crashes, 1u);
  EXPECT_NE(victim.load(), -1);
  EXPECT_NE(pool->worker_pids().at(0), victim.load());
}

TEST(WorkersPool, WorkerKilledOnEveryAttemptIsSandboxError) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.workers = 1;
  config.instruction_budget = int64_t{1} << 40;
  std::atomic<int> runs{0};
  auto pool = start_pool(config, [&](pid_t worker) {
    if (++runs >= 3) ::kill(worker, SIGKILL);  // every attempt of the slow candidate
  });
  ASSERT_TRUE(pool);
  Verifier v(*pool, config);
  auto task = testing::relu_scale_task();
  ASSERT_EQ(verdict_name(v.verify(task, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
  VerifyResult r = v.verify(task, slow_answer(2'000'000));
  EXPECT_EQ(verdict_name(r.verdict), "SANDBOX_ERROR") << r.feedback;
  EXPECT_NE(r.feedback.find("signal 9"), std::string::npos) << r.feedback;
  EXPECT_EQ(runs.load(), 4);  // reference, good kernel, then the attempt and its one retry
  EXPECT_EQ(pool->stats().crashes, 2u);
}

// A fault the candidate's kernel causes in the interpreter (a SIGSEGV, here sent from outside at
// the same point of both attempts) is the candidate's: RUNTIME_ERROR, not a void sample, which
// would reward crashing the sandbox. Two different losses stay a SANDBOX_ERROR.
TEST(WorkersPool, TheSameCrashOnBothAttemptsIsTheCandidatesRuntimeError) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.workers = 1;
  config.instruction_budget = int64_t{1} << 40;
  for (int second : {SIGSEGV, SIGKILL}) {
    std::atomic<int> runs{0};
    auto pool = start_pool(config, [&](pid_t worker) {
      if (++runs >= 3) ::kill(worker, runs == 3 ? SIGSEGV : second);
    });
    ASSERT_TRUE(pool);
    Verifier v(*pool, config);
    auto task = testing::relu_scale_task();
    ASSERT_EQ(verdict_name(v.verify(task, answer(kGoodKernel, kGoodLaunch)).verdict), "OK");
    VerifyResult r = v.verify(task, slow_answer(2'000'000));
    if (second == SIGSEGV) {
      EXPECT_EQ(verdict_name(r.verdict), "RUNTIME_ERROR") << r.feedback;
      EXPECT_NE(r.feedback.find("crashed (Segmentation fault) running the kernels of this answer, on both attempts"),
                std::string::npos)
          << r.feedback;
      EXPECT_EQ(pool->stats().candidate_crashes, 1u);
    } else {
      EXPECT_EQ(verdict_name(r.verdict), "SANDBOX_ERROR") << r.feedback;
      EXPECT_EQ(pool->stats().candidate_crashes, 0u);
    }
    EXPECT_EQ(pool->stats().crashes, 2u);
  }
}

TEST(WorkersPool, CompileTimeoutKillsTheWorkerAndAFailingReferenceIsNotThePolicysFault) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.workers = 1;
  config.compile_timeout_s = 0.001;  // no NVRTC compile is that fast
  auto pool = start_pool(config);
  ASSERT_TRUE(pool);
  const pid_t before = pool->worker_pids().at(0);
  Verifier v(*pool, config);
  // The reference is compiled first, times out, and the verdict is the infrastructure's.
  VerifyResult r = v.verify(testing::relu_scale_task(), answer(kGoodKernel, kGoodLaunch));
  EXPECT_EQ(verdict_name(r.verdict), "SANDBOX_ERROR") << r.feedback;
  EXPECT_NE(r.feedback.find("compilation took longer than 0.001 s"), std::string::npos)
      << r.feedback;
  EXPECT_GE(pool->stats().timeouts, 1u);
  ASSERT_EQ(pool->worker_pids().size(), 1u);
  EXPECT_NE(pool->worker_pids().at(0), before);
}

TEST(WorkersPool, WorkersRunUnderResourceLimits) {
  SandboxConfig config;
  config.workers = 1;
  config.limit_file_mb = 3;
  config.limit_open_files = 77;
  config.limit_memory_mb = 5000;
  auto pool = start_pool(config);
  ASSERT_TRUE(pool);
  const std::string worker = "/proc/" + std::to_string(pool->worker_pids().at(0)) + "/limits";
  auto soft_limit = [](const std::string& limits_file, const std::string& name) {
    std::ifstream in(limits_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = text.find(name);
    if (at == std::string::npos) return std::string("missing");
    std::istringstream row(text.substr(at + name.size()));
    std::string soft;
    row >> soft;
    return soft;
  };
  EXPECT_EQ(soft_limit(worker, "Max core file size"), "0");
  EXPECT_EQ(soft_limit(worker, "Max file size"), std::to_string(3 << 20));
  EXPECT_EQ(soft_limit(worker, "Max open files"), "77");
  // An ASan or TSan build sets no address-space limit (their shadow memory alone is terabytes): the worker
  // keeps the one it inherited.
  EXPECT_EQ(soft_limit(worker, "Max address space"),
            kShadowMemorySanitizer ? soft_limit("/proc/self/limits", "Max address space")
                              : std::to_string(int64_t{5000} << 20));
  // The OOM killer takes a worker first, never a policy rank.
  std::ifstream oom("/proc/" + std::to_string(pool->worker_pids().at(0)) + "/oom_score_adj");
  int score = 0;
  oom >> score;
  EXPECT_EQ(score, 1000);
}

TEST(WorkersPool, ServesManyThreads) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  auto pool = start_pool(config);
  ASSERT_TRUE(pool);
  Verifier v(*pool, config);
  auto task = testing::relu_scale_task();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    // Distinct code per thread, so every call really goes to a worker.
    std::string code = std::string(kGoodKernel) + "  // thread " + std::to_string(t);
    threads.emplace_back(
        [&, code] { ok += v.verify(task, answer(code, kGoodLaunch)).verdict == Verdict::kOk; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(pool->worker_pids().size(), 2u);
}

TEST(WorkersPool, ServiceQueuesSubmissionsAndDrainsOnDestruction) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SandboxConfig config;
  config.device = "cpu";
  auto service = SandboxService::start(config, std::string(LEAP_BINARY_DIR) + "/src/apps/leap");
  ASSERT_TRUE(service.has_value()) << service.status().message();
  auto task = testing::relu_scale_task();
  std::vector<std::future<VerifyResult>> results;
  for (int i = 0; i < 5; ++i)
    results.push_back((*service)->submit(task, answer(kGoodKernel, kGoodLaunch)));
  results.push_back((*service)->submit(task, "no code"));
  auto last = (*service)->submit(task, answer(kGoodKernel, kGoodLaunch));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(verdict_name(results[i].get().verdict), "OK");
  EXPECT_EQ(verdict_name(results[5].get().verdict), "FORMAT_ERROR");
  service->reset();  // the destructor finishes what is queued
  EXPECT_EQ(verdict_name(last.get().verdict), "OK");
}

}  // namespace
}  // namespace leap::sandbox
