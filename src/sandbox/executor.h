// The executor interface: compile an answer and run its launch plan on device buffers. Two
// implementations: CpuExecutor (NVRTC to PTX, run by the PTX interpreter) here, and the GPU
// executor in cuda/ (NVRTC to CUBIN, loaded and launched through the runtime API).
//
// Invariants:
//  - nothing here throws or aborts on a bad candidate: every failure is an ExecOutcome whose
//    verdict says whose fault it is (COMPILE_ERROR, LAUNCH_ERROR, MEMORY_VIOLATION, TIMEOUT,
//    RUNTIME_ERROR, UNSUPPORTED are the candidate's; SANDBOX_ERROR is ours);
//  - an executor serves one thread (a worker process runs one job at a time);
//  - `broken()` turns true when a fault left the device unusable (a sticky CUDA error): the
//    worker then exits after replying, and the supervisor starts a fresh one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "sandbox/launch_plan.h"
#include "sandbox/ptx/interpreter.h"
#include "sandbox/verdict.h"

namespace leap::sandbox {

struct ExecOutcome {
  Verdict verdict = Verdict::kOk;
  std::string message;
  bool ok() const { return verdict == Verdict::kOk; }
};

// A compiled answer: its kernels by the name expressions of the launch lines.
class Program {
 public:
  virtual ~Program() = default;
  // The PTX parameter list of a launch line's kernel, or nullptr when the code has no such
  // kernel (a LAUNCH_ERROR for the caller to report).
  virtual const std::vector<ptx::ParamInfo>* params_of(
      const std::string& name_expression) const = 0;
};

struct CompileOutcome {
  ExecOutcome outcome;  // kOk, kCompileError (log in message), kUnsupported, kSandboxError
  double compile_ms = 0;
  bool cache_hit = false;
  std::unique_ptr<Program> program;
};

struct TimingOptions {
  int warmups = 3;
  int min_launches = 10;
  double min_total_ms = 25.0;
  int max_launches = 1000;
};

struct Timing {
  double median_ms = 0;
  int launches = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;  // "cpu" or "gpu"

  virtual CompileOutcome compile(const std::string& source,
                                 const std::vector<std::string>& name_expressions) = 0;

  // Device memory: zero-filled allocations at device addresses.
  virtual Expected<uint64_t> allocate(size_t bytes) = 0;
  virtual void release(uint64_t address) = 0;
  virtual Status write(uint64_t address, const void* data, size_t bytes) = 0;
  virtual Status read(uint64_t address, void* data, size_t bytes) = 0;
  // Copies device memory to device memory (a GPU does it on the device; the default goes
  // through the host).
  virtual Status copy(uint64_t to, uint64_t from, size_t bytes) {
    std::vector<uint8_t> host(bytes);
    LEAP_RETURN_IF_ERROR(read(from, host.data(), bytes));
    return write(to, host.data(), bytes);
  }

  // Runs one launch; `args` is laid out by marshal_args. May be asynchronous (GPU): errors of
  // a launch may surface at the next synchronize(). Every successful launch is followed by a
  // synchronize() before the job ends (a GPU's executor holds the device until then); a launch
  // that fails has waited for the job's earlier kernels and holds nothing.
  virtual ExecOutcome launch(const Program& program, const PlannedLaunch& launch,
                             const std::vector<std::vector<uint8_t>>& args) = 0;
  virtual ExecOutcome synchronize() = 0;

  // Bytes of guard zone the caller should place on each side of every buffer and check after
  // the run. The interpreter checks every access against its allocation exactly, so it needs
  // none (an overrun is a MEMORY_VIOLATION at the instruction); a GPU does not check accesses.
  virtual size_t guard_bytes() const = 0;

  // Whether run times mean anything (a GPU); the CPU executor reports none.
  virtual bool can_time() const { return false; }
  // Times `run_once` (which launches a whole plan) per docs/design.md: warm-ups, then at least
  // min_launches timed runs or min_total_ms, each after an L2 flush, with events; the median.
  // `prepare` runs before every run, warm-ups included, outside the timed interval: it puts
  // the buffers back as they were staged, so that no run finds an earlier run's results.
  // A failure of `run_once` is returned as is (the candidate's verdict).
  virtual ExecOutcome time(const std::function<ExecOutcome()>& run_once,
                           const std::function<Status()>& prepare, const TimingOptions& options,
                           Timing* out) {
    (void)run_once;
    (void)prepare;
    (void)options;
    (void)out;
    return {Verdict::kSandboxError, std::string(name()) + " executor does not time kernels"};
  }

  virtual bool broken() const { return false; }
  // The latest time this job's runs may wait for the device (another job's kernels holding it):
  // past it they answer SANDBOX_ERROR, before the supervisor's run timeout would judge the
  // candidate TIMEOUT for the wait. JobRunner sets it when the candidate has compiled.
  virtual void set_deadline(std::chrono::steady_clock::time_point deadline) { (void)deadline; }
};

}  // namespace leap::sandbox
