// Output comparison and feedback bounds, against hand-worked cases; and the [sandbox] options
// handed to workers on their command line reproduce the supervisor's config exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "sandbox/compare.h"
#include "sandbox/verifier.h"

namespace leap::sandbox {
namespace {

tasks::BufferData f32_buffer(const std::string& name, std::vector<float> v) {
  tasks::BufferData b;
  b.name = name;
  b.role = tasks::Role::kOut;
  b.elements = static_cast<int64_t>(v.size());
  b.bytes.resize(v.size() * 4);
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

tasks::Task task_2d() {
  tasks::Task t;
  t.id = "T";
  t.cpu_params = {{"m", int64_t{2}}, {"n", int64_t{3}}};
  t.buffers = {{"out", tasks::DType::kF32, {"m", "n"}, tasks::Role::kOut, {}}};
  t.atol = 1e-3;
  t.rtol = 1e-3;
  return t;
}

TEST(VerifyCompare, WithinTolerancePasses) {
  auto t = task_2d();
  auto c = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3, 4, 5, 6.0005f})},
                           {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_NEAR(c.max_abs_err, 0.0005, 1e-6);
}

// The candidate's buffers come from a worker's report: one shorter than the reference's, or
// with fewer bytes than its length says, never passes and is never read past its end.
TEST(VerifyCompare, ABufferOfAnotherLengthNeverPasses) {
  auto t = task_2d();
  auto shorter = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3})},
                                 {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  EXPECT_FALSE(shorter.ok);
  EXPECT_NE(shorter.message.find("has 3 elements where the reference has 6"), std::string::npos) << shorter.message;
  auto lying = f32_buffer("out", {1, 2, 3, 4, 5, 6});
  lying.bytes.resize(8);  // says 6 elements, holds 2
  auto c = compare_outputs(t, t.cpu_params, {lying}, {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  EXPECT_FALSE(c.ok);
  auto empty = compare_outputs(t, t.cpu_params, {}, {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  EXPECT_FALSE(empty.ok);
  // A dtype no dtype names has 0 bytes an element: 6 elements in no bytes "hold", and nothing
  // would be scanned. Another dtype is refused whatever it is.
  for (int dtype : {99, static_cast<int>(tasks::DType::kI32)}) {
    auto forged = f32_buffer("out", {});
    forged.dtype = static_cast<tasks::DType>(dtype);
    forged.elements = 6;
    if (dtype != 99) forged.bytes.resize(24);
    auto f = compare_outputs(t, t.cpu_params, {forged}, {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
    EXPECT_FALSE(f.ok) << dtype;
    EXPECT_NE(f.message.find("is reported as dtype"), std::string::npos) << f.message;
  }
}

TEST(VerifyCompare, FirstMismatchWithMultiIndex) {
  auto t = task_2d();
  auto c = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3, 4, 9, 7})},
                           {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(c.ok);
  EXPECT_DOUBLE_EQ(c.max_abs_err, 4.0);
  EXPECT_NE(c.message.find("2 of 6 elements differ; first at index 4 = [1, 1]: got 9, expected 5"),
            std::string::npos)
      << c.message;
}

// For the trials after the first (verifier.cpp), the message names where the outputs differ but
// neither the expected value nor the error, from which a one-element output's would follow.
TEST(VerifyCompare, ValuesCanBeLeftOutOfTheMessage) {
  auto t = task_2d();
  const auto ref = f32_buffer("out", {1, 2, 3, 4, 5, 6});
  auto shown = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3, 4, 5, 7.25f})}, {ref});
  EXPECT_NE(shown.message.find("got 7.25, expected 6"), std::string::npos) << shown.message;
  EXPECT_NE(shown.message.find("max abs error 1.25"), std::string::npos) << shown.message;
  auto hidden = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3, 4, 5, 7.25f})}, {ref}, false);
  EXPECT_FALSE(hidden.ok);
  EXPECT_NE(hidden.message.find("1 of 6 elements differ; first at index 5"), std::string::npos) << hidden.message;
  for (const char* leak : {"6", "7.25", "1.25", "expected", "max abs"})
    EXPECT_EQ(hidden.message.find(leak, hidden.message.find("index 5") + 7), std::string::npos)
        << leak << " in: " << hidden.message;
}

TEST(VerifyCompare, UnwrittenNaNIsReported) {
  auto t = task_2d();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto c = compare_outputs(t, t.cpu_params, {f32_buffer("out", {1, 2, 3, 4, nan, nan})},
                           {f32_buffer("out", {1, 2, 3, 4, 5, 6})});
  ASSERT_FALSE(c.ok);
  EXPECT_TRUE(std::isinf(c.max_abs_err));
  EXPECT_NE(c.message.find("2 elements were never written"), std::string::npos) << c.message;
}

TEST(VerifyCompare, AllZeroPassesOnlyIfTheReferenceIsZero) {
  auto t = task_2d();
  t.atol = 1.0;  // loose enough that tolerance alone would accept zeros
  auto zeros = f32_buffer("out", {0, 0, 0, 0, 0, 0});
  auto small = f32_buffer("out", {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.9f});
  auto big = f32_buffer("out", {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1.5f});
  EXPECT_TRUE(compare_outputs(t, t.cpu_params, {zeros}, {zeros}).ok);
  auto c = compare_outputs(t, t.cpu_params, {zeros}, {big});
  // 1.5 vs 0 is outside atol 1 + rtol: a mismatch; with the reference all small it would pass.
  EXPECT_FALSE(c.ok);
  EXPECT_TRUE(compare_outputs(t, t.cpu_params, {zeros}, {small}).ok);
  t.rtol = 1.0;  // now 1.5 is within tolerance of 0, but the zero guard still fails it
  auto g = compare_outputs(t, t.cpu_params, {zeros}, {big});
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.message.find("(near) zero"), std::string::npos) << g.message;
}

TEST(VerifyCompare, FeedbackIsBoundedOnUtf8Boundaries) {
  std::string text(3000, 'a');
  EXPECT_EQ(bound_feedback(text, 2048).size(), 2048u);
  EXPECT_EQ(bound_feedback("short", 2048), "short");
  std::string utf8;
  for (int i = 0; i < 1000; ++i) utf8 += "\xc3\xa9";  // é, two bytes each
  std::string cut = bound_feedback(utf8, 101);
  EXPECT_LE(cut.size(), 101u);
  size_t body = cut.find(" [...]");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(body % 2, 0u);  // never half a character
}

TEST(VerifyConfig, WorkerArgumentsReproduceTheConfig) {
  OptionSet a;
  SandboxConfig ca;
  ca.declare(a);
  ASSERT_TRUE(a.parse({"--sandbox.workers=5", "--device=cpu", "--sandbox.noise_band=0.125",
                       "--sandbox.instruction_budget=12345", "--sandbox.max_launches=4",
                       "--sandbox.gpu_index=3"})
                  .is_ok());
  OptionSet b;
  SandboxConfig cb;
  cb.declare(b);
  ASSERT_TRUE(b.parse(ca.to_args()).is_ok());
  EXPECT_EQ(a.to_ini(), b.to_ini());
  EXPECT_EQ(cb.workers, 5);
  EXPECT_EQ(cb.plan_limits().max_launches, 4);
}

TEST(VerifyConfig, DeviceResolution) {
  EXPECT_EQ(*resolve_device("auto", 0, "no driver"), "cpu");
  EXPECT_EQ(*resolve_device("auto", 1, ""), "gpu");
  EXPECT_EQ(*resolve_device("cpu", 4, ""), "cpu");
  auto none = resolve_device("gpu", 0, "no CUDA driver installed");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("no CUDA driver installed"), std::string::npos);
}

}  // namespace
}  // namespace leap::sandbox
