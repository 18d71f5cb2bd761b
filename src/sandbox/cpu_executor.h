// The CPU executor: NVRTC compiles the answer to PTX for the project's fixed target, and the PTX
// interpreter runs it on GlobalMemory. Every access is checked against its allocation and every
// thread-instruction counted against the budget, so faults and runaway loops are exact,
// deterministic verdicts (MEMORY_VIOLATION, TIMEOUT) rather than crashes or hangs.
#pragma once

#include <memory>

#include "sandbox/executor.h"
#include "sandbox/nvrtc_compiler.h"

namespace leap::sandbox {

struct CpuExecutorOptions {
  uint64_t instruction_budget = 500'000'000;  // thread-instructions per launch
  bool check_schedules = true;                // a second thread order exposes missing barriers
};

class CpuExecutor final : public Executor {
 public:
  // `compiler` is shared so its cache outlives executors (one per worker process).
  CpuExecutor(std::shared_ptr<NvrtcCompiler> compiler, CpuExecutorOptions options);
  ~CpuExecutor() override;

  const char* name() const override { return "cpu"; }
  CompileOutcome compile(const std::string& source,
                         const std::vector<std::string>& name_expressions) override;
  Expected<uint64_t> allocate(size_t bytes) override;
  void release(uint64_t address) override;
  Status write(uint64_t address, const void* data, size_t bytes) override;
  Status read(uint64_t address, void* data, size_t bytes) override;
  ExecOutcome launch(const Program& program, const PlannedLaunch& launch,
                     const std::vector<std::vector<uint8_t>>& args) override;
  ExecOutcome synchronize() override { return {}; }
  size_t guard_bytes() const override { return 0; }

 private:
  std::shared_ptr<NvrtcCompiler> compiler_;
  CpuExecutorOptions options_;
  std::unique_ptr<ptx::GlobalMemory> memory_;
};

}  // namespace leap::sandbox
