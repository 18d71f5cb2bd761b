// SFT material from real references, checked by the real sandbox (in-process, on the PTX
// interpreter): augmented variants differ from the reference and mostly still pass; broken
// variants reach the verdicts they were made for.
#include <gtest/gtest.h>

#include <map>

#include "rl/sft_examples.h"
#include "sandbox/cpu_executor.h"
#include "sandbox/verifier.h"
#include "tasks/suite.h"

namespace leap::rl {
namespace {

using sandbox::Verdict;

TEST(SftExamples, HandWorkedRewrites) {
  tasks::Task t;
  t.buffers = {{"a", tasks::DType::kF32, {"n"}, tasks::Role::kIn, {}}, {"out", tasks::DType::kF32, {"n"}, tasks::Role::kOut, {}}};
  t.params["n"] = int64_t{37};
  std::string ref =
      "```cuda\n__global__ void copy(const float* a, float* out, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a[i];\n}\n"
      "// launch: copy<<<cdiv(n, 256), 256>>>(a, out, n)\n```";
  Rng rng(1);
  auto aug = augment_answer(t, ref, rng, 10);
  std::map<std::string, std::string> by_kind;
  for (const auto& v : aug) by_kind[v.kind] = v.answer;
  ASSERT_TRUE(by_kind.count("rename_locals"));
  EXPECT_NE(by_kind["rename_locals"].find("int idx = blockIdx.x"), std::string::npos);
  EXPECT_NE(by_kind["rename_locals"].find("(a, out, n)"), std::string::npos);  // launch line untouched
  ASSERT_TRUE(by_kind.count("block_size_128"));
  EXPECT_NE(by_kind["block_size_128"].find("copy<<<cdiv(n, 128), 128>>>"), std::string::npos);
  ASSERT_TRUE(by_kind.count("rename_kernel"));
  EXPECT_EQ(by_kind["rename_kernel"].find("void copy("), std::string::npos);

  EXPECT_FALSE(by_kind.count("reorder_statements"));  // one declaration: nothing to reorder
  // Without kernel renaming: the other rewrites, and the kernel keeps its name in every one.
  Rng rng2(1);
  auto kept = augment_answer(t, ref, rng2, 10, /*rename_kernels=*/false);
  ASSERT_FALSE(kept.empty());
  for (const auto& v : kept) {
    EXPECT_NE(v.kind, "rename_kernel");
    EXPECT_NE(v.answer.find("void copy("), std::string::npos) << v.kind;
  }

  // Two independent declarations swap; a dependent pair does not.
  std::string two =
      "```cuda\n__global__ void add2(const float* a, float* out, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  int stride = gridDim.x * blockDim.x;\n"
      "  for (; i < n; i += stride) out[i] = a[i];\n}\n"
      "// launch: add2<<<cdiv(n, 256), 256>>>(a, out, n)\n```";
  std::map<std::string, std::string> two_kinds;
  for (const auto& v : augment_answer(t, two, rng, 10)) two_kinds[v.kind] = v.answer;
  ASSERT_TRUE(two_kinds.count("reorder_statements"));
  EXPECT_NE(two_kinds["reorder_statements"].find("  int stride = gridDim.x * blockDim.x;\n  int i = blockIdx.x"),
            std::string::npos);
  std::string dependent = two;
  dependent.replace(dependent.find("gridDim.x * blockDim.x"), 22, "i + gridDim.x * blockDim.x");
  for (const auto& v : augment_answer(t, dependent, rng, 10)) EXPECT_NE(v.kind, "reorder_statements");

  std::map<std::string, std::string> broken;
  for (const auto& v : break_answer(t, ref)) broken[v.kind] = v.answer;
  EXPECT_EQ(broken["no_fence"].find("```"), std::string::npos);
  EXPECT_NE(broken["grid_rounded_down"].find("<<<(n) / (256), 256>>>"), std::string::npos);
  EXPECT_EQ(broken["drop_guard"].find("if (i < n)"), std::string::npos);
  EXPECT_NE(broken["wrong_launch_name"].find("// launch: copy_<<<"), std::string::npos);
  EXPECT_NE(broken["missing_semicolon"].find("out[i] = a[i]\n"), std::string::npos);
}

TEST(SftExamples, SandboxAgreesOnLevel1References) {
  if (!sandbox::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC";
  auto suite = tasks::load_suite(std::string(LEAP_SOURCE_DIR) + "/tasks/level1.jsonl");
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  sandbox::LocalChannel channel(
      std::make_unique<sandbox::CpuExecutor>(std::make_shared<sandbox::NvrtcCompiler>(), sandbox::CpuExecutorOptions{}));
  sandbox::SandboxConfig config;
  config.trials = 1;
  sandbox::Verifier verifier(channel, config);
  int aug_total = 0, aug_ok = 0;
  std::map<std::string, int> broken_ok;
  Rng rng(3);
  for (size_t i = 0; i < suite->tasks.size() && i < 8; ++i) {
    const auto& task = suite->tasks[i];
    for (const auto& v : augment_answer(task, task.reference, rng, 3)) {
      ++aug_total;
      aug_ok += verifier.verify(task, v.answer).verdict == Verdict::kOk;
    }
    for (const auto& v : break_answer(task, task.reference)) {
      Verdict got = verifier.verify(task, v.answer).verdict;
      if (v.kind == "no_fence") {
        EXPECT_EQ(got, Verdict::kFormatError) << task.id;
      } else if (v.kind == "missing_semicolon") {
        EXPECT_EQ(got, Verdict::kCompileError) << task.id;
      } else if (v.kind == "wrong_launch_name") {
        EXPECT_NE(got, Verdict::kOk) << task.id;
      }
      broken_ok[v.kind] += got == Verdict::kOk;
    }
  }
  std::printf("augmented variants passing: %d of %d\n", aug_ok, aug_total);
  EXPECT_GT(aug_total, 8);
  EXPECT_GE(aug_ok * 2, aug_total);  // most rewrites keep the meaning
  EXPECT_EQ(broken_ok["no_fence"] + broken_ok["missing_semicolon"] + broken_ok["wrong_launch_name"], 0);
}

}  // namespace
}  // namespace leap::rl
