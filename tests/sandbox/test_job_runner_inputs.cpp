// The worker's cache of trial inputs (JobRunner::trial_inputs, sandbox.input_cache_mb): a hit
// returns the bytes tasks::generate_inputs draws; anything the inputs depend on (seed, trial,
// sizes, a buffer's initialisation) is another entry; and a job whose kernel changes an `inout`
// buffer in place leaves the cached inputs as generated, so the next job of the task computes
// from the same inputs and gets the same outputs as a runner without the cache.
#include <gtest/gtest.h>

#include <memory>

#include "sandbox/cpu_executor.h"
#include "sandbox/job_runner.h"
#include "tasks/inputs.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

tasks::Task axpy() { return testing::axpy_task(900); }

constexpr const char* kAxpy = R"(__global__ void k(const float* x, float* y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
// launch: k<<<cdiv(n, 128), 128>>>(x, y, alpha, n)
)";

TrialSpec trial(uint64_t seed, uint64_t index, tasks::SizeSet sizes = tasks::SizeSet::kCpu) {
  TrialSpec t;
  t.seed = seed;
  t.trial = index;
  t.sizes = sizes;
  return t;
}

TEST(JobRunnerInputs, AHitIsTheGeneratedInputsAndEveryDependencyIsItsOwnEntry) {
  CpuExecutor cpu(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{});
  JobRunner runner(cpu, TimingOptions{}, size_t{64} << 20);
  const tasks::Task task = axpy();
  auto first = runner.trial_inputs(task, trial(7, 0));
  ASSERT_TRUE(first.has_value());
  auto drawn = tasks::generate_inputs(task, task.cpu_params, 7, 0);
  ASSERT_TRUE(drawn.has_value());
  ASSERT_EQ((*first)->size(), drawn->size());
  for (size_t i = 0; i < drawn->size(); ++i) EXPECT_EQ((**first)[i].bytes, (*drawn)[i].bytes);
  auto again = runner.trial_inputs(task, trial(7, 0));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(first->get(), again->get()) << "the second call must be the cached entry";
  EXPECT_EQ(runner.input_cache_hits(), 1u);

  tasks::Task uniform = task;
  uniform.buffers[0].init.kind = tasks::Init::Kind::kUniform;
  uniform.buffers[0].init.a = -1;
  uniform.buffers[0].init.b = 1;
  for (auto [t, spec] : {std::pair{task, trial(8, 0)}, std::pair{task, trial(7, 1)},
                         std::pair{task, trial(7, 0, tasks::SizeSet::kGpu)}, std::pair{uniform, trial(7, 0)}}) {
    auto other = runner.trial_inputs(t, spec);
    ASSERT_TRUE(other.has_value());
    EXPECT_NE(other->get(), first->get());
    EXPECT_NE((**other)[0].bytes, (**first)[0].bytes);
  }
  EXPECT_EQ(runner.input_cache_hits(), 1u);
}

TEST(JobRunnerInputs, AnInPlaceKernelLeavesTheCachedInputsAsGenerated) {
  LEAP_SKIP_WITHOUT_NVRTC();
  JobRequest req;
  req.task = axpy();
  req.code = kAxpy;
  req.trials = {trial(3, 0), trial(3, 1)};
  CpuExecutor plain_cpu(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{});
  JobRunner plain(plain_cpu);  // no cache
  const JobReport want = plain.run(req);
  ASSERT_TRUE(want.outcome.ok()) << want.outcome.message;
  EXPECT_EQ(plain.input_cache_hits(), 0u);

  CpuExecutor cpu(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{});
  JobRunner cached(cpu, TimingOptions{}, size_t{64} << 20);
  for (int job = 0; job < 3; ++job) {
    const JobReport got = cached.run(req);
    ASSERT_TRUE(got.outcome.ok()) << got.outcome.message;
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t t = 0; t < want.outputs.size(); ++t) {
      ASSERT_EQ(got.outputs[t].size(), 1u);  // y, the one buffer a run writes
      EXPECT_EQ(got.outputs[t][0].bytes, want.outputs[t][0].bytes) << "job " << job << " trial " << t;
    }
  }
  EXPECT_EQ(cached.input_cache_hits(), 4u);  // jobs 2 and 3, both trials
}

}  // namespace
}  // namespace leap::sandbox
