// CpuExecutor: PTX from the shared NVRTC compiler, parsed once per compiled answer, launched
// by the interpreter. Interpreter outcomes map one-to-one onto verdicts.
#include "sandbox/cpu_executor.h"

#include <fmt/format.h>

#include <cstring>
#include <map>

namespace leap::sandbox {

namespace {

class PtxProgram final : public Program {
 public:
  explicit PtxProgram(ptx::Module module) : module_(std::move(module)) {}

  const std::vector<ptx::ParamInfo>* params_of(const std::string& name_expression) const override {
    const ptx::KernelInfo* k = kernel(name_expression);
    return k ? &k->params : nullptr;
  }
  const ptx::KernelInfo* kernel(const std::string& name_expression) const {
    auto it = lowered_.find(name_expression);
    return module_.find_kernel(it == lowered_.end() ? name_expression : it->second);
  }
  const ptx::Module& module() const { return module_; }
  void add_lowered(const std::string& expr, const std::string& lowered) {
    lowered_[expr] = lowered;
  }

 private:
  ptx::Module module_;
  std::map<std::string, std::string> lowered_;  // name expression -> mangled entry name
};

Verdict verdict_of(ptx::RunOutcome o) {
  switch (o) {
    case ptx::RunOutcome::kOk:
      return Verdict::kOk;
    case ptx::RunOutcome::kMemoryViolation:
      return Verdict::kMemoryViolation;
    case ptx::RunOutcome::kTimeout:
      return Verdict::kTimeout;
    case ptx::RunOutcome::kUnsupported:
      return Verdict::kUnsupported;
    case ptx::RunOutcome::kRuntimeError:
      return Verdict::kRuntimeError;
  }
  return Verdict::kSandboxError;
}

}  // namespace

CpuExecutor::CpuExecutor(std::shared_ptr<NvrtcCompiler> compiler, CpuExecutorOptions options)
    : compiler_(std::move(compiler)),
      options_(options),
      memory_(std::make_unique<ptx::GlobalMemory>()) {}

CpuExecutor::~CpuExecutor() = default;

CompileOutcome CpuExecutor::compile(const std::string& source,
                                    const std::vector<std::string>& name_expressions) {
  CompileOutcome out;
  CompileOptions copts;
  copts.target = CompileTarget::kPtx;
  copts.name_expressions = name_expressions;
  const uint64_t hits_before = compiler_->cache_stats().hits;
  auto result = compiler_->compile(source, copts);
  out.cache_hit = compiler_->cache_stats().hits > hits_before;
  out.compile_ms = out.cache_hit ? 0.0 : result->compile_ms;
  if (!result->ok) {
    out.outcome = {Verdict::kCompileError, result->log};
    return out;
  }
  auto module = ptx::Module::parse(result->ptx);
  if (!module) {
    out.outcome = {Verdict::kUnsupported,
                   "the CPU interpreter cannot run this code: " + module.status().message()};
    return out;
  }
  auto program = std::make_unique<PtxProgram>(std::move(*module));
  for (const auto& [expr, lowered] : result->lowered_names) program->add_lowered(expr, lowered);
  out.program = std::move(program);
  return out;
}

Expected<uint64_t> CpuExecutor::allocate(size_t bytes) {
  return memory_->allocate(bytes);
}

void CpuExecutor::release(uint64_t address) {
  memory_->release(address);
}

Status CpuExecutor::write(uint64_t address, const void* data, size_t bytes) {
  if (bytes > memory_->size_of(address)) return internal_error("write past an allocation");
  if (bytes) std::memcpy(memory_->host_pointer(address), data, bytes);
  return Status::ok();
}

Status CpuExecutor::read(uint64_t address, void* data, size_t bytes) {
  if (bytes > memory_->size_of(address)) return internal_error("read past an allocation");
  if (bytes) std::memcpy(data, memory_->host_pointer(address), bytes);
  return Status::ok();
}

ExecOutcome CpuExecutor::launch(const Program& program, const PlannedLaunch& launch,
                                const std::vector<std::vector<uint8_t>>& args) {
  const auto& ptx_program = static_cast<const PtxProgram&>(program);
  const ptx::KernelInfo* kernel = ptx_program.kernel(launch.kernel);
  if (!kernel) return {Verdict::kLaunchError, fmt::format("no kernel named {}", launch.kernel)};
  ptx::LaunchDims dims;
  for (int i = 0; i < 3; ++i) {
    dims.grid[i] = launch.grid[i];
    dims.block[i] = launch.block[i];
  }
  dims.dynamic_shared_bytes = launch.shared_bytes;
  ptx::RunOptions ropts;
  ropts.instruction_budget = options_.instruction_budget;
  ropts.check_schedules = options_.check_schedules;
  ptx::RunResult r = ptx::launch(ptx_program.module(), kernel->name, dims, args, *memory_, ropts);
  if (r.outcome == ptx::RunOutcome::kOk) return {};
  return {verdict_of(r.outcome), r.message};  // names the instruction, thread and address
}

}  // namespace leap::sandbox
