// SandboxEngine's asynchronous path, the one the streaming pipeline drives: jobs started one at a
// time come back as each ends, not as a batch. Real `leap worker` processes verify a real kernel;
// sandbox.simulated_exec_ms holds its slot 2 s longer, so a job that fails at once (a task index
// outside the suite) must come back while it is still running.
#include <gtest/gtest.h>

#include <chrono>

#include "fake_engines.h"
#include "mpi/sandbox_engine.h"
#include "sandbox/nvrtc_compiler.h"

namespace leap::mpi {
namespace {

TEST(SandboxEngineAsync, ReturnsEachVerdictAsItsJobEnds) {
  if (!sandbox::nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  auto suite = testing_fakes::fake_suite();
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  sandbox::SandboxConfig config;
  config.device = "cpu";
  config.workers = 2;
  config.simulated_exec_ms = 2000;
  auto engine = SandboxEngine::start(*suite, config, std::string(LEAP_BINARY_DIR) + "/src/apps/leap");
  ASSERT_TRUE(engine.has_value()) << engine.status().message();
  EXPECT_EQ((*engine)->slots(), 2);
  const std::string good = suite->tasks[0].reference;
  (*engine)->start({11, 0, good});       // compiles, runs, then holds its slot 2 s
  (*engine)->start({12, 99, "anything"});  // no such task: a SANDBOX_ERROR at once
  auto first = (*engine)->finished(std::chrono::milliseconds(0));
  ASSERT_EQ(first.size(), 1u) << "the failed job must not wait for the running one";
  EXPECT_EQ(first[0].uid, 12);
  EXPECT_EQ(first[0].verdict, static_cast<int32_t>(sandbox::Verdict::kSandboxError));
  (*engine)->start({13, 1, good});  // a second slot's job, started while the first runs
  std::vector<SandboxOutcome> rest;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (rest.size() < 2 && std::chrono::steady_clock::now() < deadline)
    for (auto& o : (*engine)->finished(std::chrono::milliseconds(200))) rest.push_back(o);
  ASSERT_EQ(rest.size(), 2u);
  for (const auto& o : rest) {
    EXPECT_TRUE(o.uid == 11 || o.uid == 13) << o.uid;
    EXPECT_EQ(o.verdict, static_cast<int32_t>(sandbox::Verdict::kOk)) << o.feedback;
    EXPECT_GE(o.slot_ms, 2000.0);  // the simulated latency held the slot
  }
  EXPECT_TRUE((*engine)->finished(std::chrono::milliseconds(0)).empty());
}

}  // namespace
}  // namespace leap::mpi
