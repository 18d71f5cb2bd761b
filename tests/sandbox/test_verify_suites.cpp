// Every reference answer of the committed suites passes the sandbox on the CPU (the PTX
// interpreter), with every trial: the suites' promise that a correct answer exists and that the
// verifier accepts it. As a control, each task is also given the next task's reference, which
// must not pass: a verifier that accepts everything cannot pass this test.
#include <gtest/gtest.h>

#include <memory>

#include "sandbox/cpu_executor.h"
#include "sandbox/verifier.h"
#include "tasks/suite.h"

namespace leap::sandbox {
namespace {

class SuiteReferences : public ::testing::TestWithParam<const char*> {};

TEST_P(SuiteReferences, EveryReferencePassesOnTheCpu) {
  if (!nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC";
  auto suite = tasks::load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/" + GetParam());
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  LocalChannel channel(
      std::make_unique<CpuExecutor>(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{}));
  SandboxConfig config;
  Verifier verifier(channel, config);
  int passed = 0;
  const auto& tasks = suite->tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    VerifyResult r = verifier.verify(tasks[i], tasks[i].reference);
    EXPECT_EQ(verdict_name(r.verdict), "OK") << tasks[i].id << ": " << r.feedback;
    passed += r.verdict == Verdict::kOk;
    const auto& other = tasks[(i + 1) % tasks.size()];
    VerifyResult x = verifier.verify(tasks[i], other.reference);
    EXPECT_NE(verdict_name(x.verdict), "OK") << other.id << "'s reference passed " << tasks[i].id;
  }
  std::printf("%s: %d of %zu references pass\n", GetParam(), passed, tasks.size());
}

INSTANTIATE_TEST_SUITE_P(Suites, SuiteReferences,
                         ::testing::Values("level1.jsonl", "level2.jsonl"));

}  // namespace
}  // namespace leap::sandbox
