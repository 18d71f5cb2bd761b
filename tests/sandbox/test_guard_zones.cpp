// The job runner's guard zones, checked without a GPU. A GPU does not check memory accesses, so
// the runner places guard bytes on both sides of every buffer and judges a kernel that changed
// them MEMORY_VIOLATION; the interpreter checks every access exactly and asks for none. Here the
// interpreter runs behind an executor that asks for guard zones as a GPU's does, so an overrun
// of a few elements lands in the guard (inside the allocation, where the interpreter allows it)
// and only the runner's checks can catch it: in the checked run and in a timed run; and an input
// changed beyond the first 4 MiB piece the runner reads back is found at its element. (The
// staged copies kept for timing are compared the same way in every timed case here, but none
// of them is larger than one piece.)
#include <gtest/gtest.h>

#include <string>

#include "sandbox/verifier.h"
#include "verify_fixture.h"
#include "wall_clock_executor.h"

namespace leap::sandbox {
namespace {

using testing::answer;

constexpr size_t kGuard = 256;

VerifyResult verify(const tasks::Task& task, const std::string& completion) {
  return testing::verify_timed(task, completion, kGuard);
}

tasks::Task sized(int64_t n) {
  tasks::Task t = testing::relu_scale_task();
  t.params["n"] = n;  // the "GPU" sizes
  return t;
}

// The body of a relu * alpha kernel with `extra` before its store.
std::string kernel(const std::string& extra) {
  return R"(__device__ int launches;
__global__ void count() { launches += 1; }
__global__ void k(const float* x, float* out, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
)" + extra + R"(
  if (i < n) out[i] = fmaxf(x[i], 0.f) * alpha;
})";
}
const char* kLaunches =
    "// launch: count<<<1, 1>>>()\n"
    "// launch: k<<<cdiv(n, 256), 256>>>(x, out, alpha, n)\n";

TEST(GuardZones, AnHonestKernelPassesAndIsTimed) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(sized(700), answer(kernel(""), kLaunches));
  EXPECT_EQ(verdict_name(r.verdict), "OK") << r.feedback;
  EXPECT_TRUE(r.speedup.has_value()) << r.feedback;
}

TEST(GuardZones, WritingOneElementPastTheEndIsAMemoryViolation) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(sized(700), answer(kernel("  if (i == n) out[i] = 1.f;"), kLaunches));
  EXPECT_EQ(verdict_name(r.verdict), "MEMORY_VIOLATION") << r.feedback;
  EXPECT_NE(r.feedback.find("wrote up to 4 bytes past its end of buffer 'out'"), std::string::npos)
      << r.feedback;
}

TEST(GuardZones, WritingBeforeTheStartIsAMemoryViolation) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(sized(700), answer(kernel("  if (i == 0) out[-2] = 1.f;"), kLaunches));
  EXPECT_EQ(verdict_name(r.verdict), "MEMORY_VIOLATION") << r.feedback;
  EXPECT_NE(r.feedback.find("wrote 8 bytes before its start of buffer 'out'"), std::string::npos)
      << r.feedback;
}

// Launches 2 to 5 are the warm-up and the timed runs: the overrun happens only there, and the
// read-back of a timed run still finds the guard changed.
TEST(GuardZones, AnOverrunOnlyWhileTimedIsCaught) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(
      sized(700), answer(kernel("  if (launches >= 2 && launches <= 5 && i == n) out[n + 3] = 1.f;"), kLaunches));
  EXPECT_EQ(verdict_name(r.verdict), "MEMORY_VIOLATION") << r.feedback;
  EXPECT_NE(r.feedback.find("in a timed run"), std::string::npos) << r.feedback;
  EXPECT_NE(r.feedback.find("past its end of buffer 'out'"), std::string::npos) << r.feedback;
}

// An input changed past the first piece the runner reads back (pieces of 4 MiB: element
// 1,048,576 starts the second) is found, at the right element.
TEST(GuardZones, AChangedInputIsFoundAtItsElementInALaterPiece) {
  LEAP_SKIP_WITHOUT_NVRTC();
  VerifyResult r = verify(sized(1'100'000),
                          answer(kernel("  if (i == 1048600) ((float*)x)[i] = 7.f;"), kLaunches));
  EXPECT_EQ(verdict_name(r.verdict), "WRONG_ANSWER") << r.feedback;
  EXPECT_NE(r.feedback.find("modified input buffer 'x' (first change at element 1048600)"), std::string::npos)
      << r.feedback;
}

}  // namespace
}  // namespace leap::sandbox
