// The PTX interpreter behind an executor that behaves as a GPU's does towards the job runner:
// it times by the wall clock (warm-ups, then repeats, each after `prepare`) and may ask for guard
// zones around every buffer, so the runner's timed runs and guard checks run without a GPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "sandbox/cpu_executor.h"
#include "sandbox/job_runner.h"
#include "sandbox/verifier.h"

namespace leap::sandbox::testing {

// The interpreter, timed like a GPU: warm-ups, then min_launches runs, `prepare` before each.
class WallClockExecutor final : public Executor {
 public:
  // guard: the guard zone it asks for on each side of a buffer (a GPU's executor asks for
  // some; the interpreter alone needs none, since it checks every access exactly).
  explicit WallClockExecutor(size_t guard = 0)
      : cpu_(std::make_shared<NvrtcCompiler>(), CpuExecutorOptions{}), guard_(guard) {}
  const char* name() const override { return "cpu-timed"; }
  CompileOutcome compile(const std::string& source,
                         const std::vector<std::string>& names) override {
    return cpu_.compile(source, names);
  }
  Expected<uint64_t> allocate(size_t bytes) override { return cpu_.allocate(bytes); }
  void release(uint64_t address) override { cpu_.release(address); }
  Status write(uint64_t a, const void* d, size_t n) override { return cpu_.write(a, d, n); }
  Status read(uint64_t a, void* d, size_t n) override { return cpu_.read(a, d, n); }
  ExecOutcome launch(const Program& p, const PlannedLaunch& l,
                     const std::vector<std::vector<uint8_t>>& args) override {
    ExecOutcome o = cpu_.launch(p, l, args);
    if (o.ok()) ++unsynchronized;
    return o;
  }
  ExecOutcome synchronize() override {
    unsynchronized = 0;
    return cpu_.synchronize();
  }
  // Successful launches since the last synchronize(): a GPU's executor holds the device for
  // them, so a job must never end with any.
  int unsynchronized = 0;
  void set_deadline(std::chrono::steady_clock::time_point d) override { deadline = d; }
  std::chrono::steady_clock::time_point deadline{};
  size_t guard_bytes() const override { return guard_; }
  bool can_time() const override { return true; }
  ExecOutcome time(const std::function<ExecOutcome()>& run_once,
                   const std::function<Status()>& prepare, const TimingOptions& o,
                   Timing* out) override {
    std::vector<double> ms;
    for (int i = 0; i < o.warmups + o.min_launches; ++i) {
      if (Status st = prepare(); !st) return {Verdict::kSandboxError, st.message()};
      const auto t0 = std::chrono::steady_clock::now();
      ExecOutcome r = run_once();
      if (!r.ok()) return r;
      if (i >= o.warmups)
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    out->launches = static_cast<int>(ms.size());
    out->median_ms = ms[ms.size() / 2];
    return {};
  }

 private:
  CpuExecutor cpu_;
  size_t guard_;
};

// A GPU-like channel over that executor: one warm-up and three timed runs per timed job.
class TimedChannel final : public JobChannel {
 public:
  explicit TimedChannel(size_t guard = 0) : executor_(guard), runner_(executor_, TimingOptions{1, 3, 0.0, 3}) {}
  JobReport run(const JobRequest& request) override { return runner_.run(request); }
  bool on_gpu() const override { return true; }

 private:
  WallClockExecutor executor_;
  JobRunner runner_;
};

// Verifies `completion` as a GPU sandbox would (device gpu: GPU-size trials, timed).
inline VerifyResult verify_timed(const tasks::Task& task, const std::string& completion, size_t guard = 0) {
  TimedChannel channel(guard);
  SandboxConfig config;
  config.device = "gpu";
  Verifier v(channel, config);
  return v.verify(task, completion);
}

}  // namespace leap::sandbox::testing
