// GpuExecutor: runtime-API module loading (cudaLibraryLoadData / cudaLibraryGetKernel), launch
// (cudaLaunchKernel), guard-zoned buffers and event timing with an L2 flush. Built only when
// the toolkit is found (LEAP_HAVE_CUDA); callers guard their use with that definition.
#include "cuda/gpu_executor.h"

#include <fmt/format.h>

#include "cuda/device_lock.h"
#include "cuda/device_probe.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <map>
#include <vector>

#include "sandbox/ptx/parser.h"

namespace leap::cuda {

namespace {

using sandbox::CompileOutcome;
using sandbox::ExecOutcome;
using sandbox::Verdict;

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

size_t ptx_type_bytes(const std::string& type) {
  if (type.size() < 3) return 0;
  int bits = std::atoi(type.c_str() + 2);
  return bits > 0 ? static_cast<size_t>(bits) / 8 : 0;
}

// Entry parameter lists from PTX text, by mangled entry name.
Expected<std::map<std::string, std::vector<sandbox::ptx::ParamInfo>>> entry_params(
    const std::string& ptx) {
  LEAP_ASSIGN_OR_RETURN(auto parsed, sandbox::ptx::parse_ptx(ptx));
  std::map<std::string, std::vector<sandbox::ptx::ParamInfo>> out;
  for (const auto& f : parsed.functions) {
    if (!f.is_entry) continue;
    auto& list = out[f.name];
    for (const auto& p : f.params) {
      size_t elem = ptx_type_bytes(p.type);
      size_t n = p.array_len > 0 ? static_cast<size_t>(p.array_len) : 1;
      list.push_back({p.name, p.type, elem * n, p.align ? p.align : elem});
    }
  }
  return out;
}

class CubinProgram final : public sandbox::Program {
 public:
  struct Kernel {
    cudaKernel_t handle = nullptr;
    std::vector<sandbox::ptx::ParamInfo> params;
    int shared_limit_set = 0;
  };
  explicit CubinProgram(cudaLibrary_t lib) : lib_(lib) {}
  ~CubinProgram() override { cudaLibraryUnload(lib_); }
  const std::vector<sandbox::ptx::ParamInfo>* params_of(const std::string& expr) const override {
    auto it = kernels_.find(expr);
    return it == kernels_.end() ? nullptr : &it->second.params;
  }
  Kernel* kernel(const std::string& expr) const {
    auto it = kernels_.find(expr);
    return it == kernels_.end() ? nullptr : &it->second;
  }
  void add(const std::string& expr, Kernel k) { kernels_[expr] = std::move(k); }

 private:
  cudaLibrary_t lib_;
  mutable std::map<std::string, Kernel> kernels_;
};

class GpuExecutor final : public sandbox::Executor {
 public:
  GpuExecutor(std::shared_ptr<sandbox::NvrtcCompiler> compiler, const std::string& pci_bus_id,
              int sm, size_t l2_bytes)
      : compiler_(std::move(compiler)), sm_(sm), lock_(pci_bus_id) {
    // Writing twice the L2's size evicts everything a previous run left in it.
    flush_bytes_ = std::max<size_t>(l2_bytes * 2, 1 << 20);
  }
  ~GpuExecutor() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (flush_) cudaFree(flush_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // The stream, the events and the L2-flush buffer; a failure here means no executor.
  Status init() {
    if (!lock_.unusable_reason().empty())
      std::fprintf(stderr,
                   "leap worker: warning: the GPU lock file %s cannot be opened (%s): timed runs may share "
                   "the device with other workers' kernels; make it readable or remove it\n",
                   lock_.path().c_str(), lock_.unusable_reason().c_str());
    cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreate(&start_);
    if (e == cudaSuccess) e = cudaEventCreate(&stop_);
    if (e != cudaSuccess) return internal_error("creating the executor's stream: " + cuda_text(e));
    e = cudaMalloc(&flush_, flush_bytes_);
    if (e != cudaSuccess) {
      cudaGetLastError();
      flush_ = nullptr;
      return internal_error("allocating the " + std::to_string(flush_bytes_) +
                            "-byte L2-flush buffer: " + cuda_text(e));
    }
    return Status::ok();
  }

  const char* name() const override { return "gpu"; }
  size_t guard_bytes() const override { return 4096; }
  bool can_time() const override { return true; }
  bool broken() const override { return broken_; }

  CompileOutcome compile(const std::string& source,
                         const std::vector<std::string>& names) override {
    CompileOutcome out;
    sandbox::CompileOptions opts;
    opts.name_expressions = names;
    opts.target = sandbox::CompileTarget::kCubin;
    opts.sm_arch = sm_;
    const uint64_t hits = compiler_->cache_stats().hits;
    auto cubin = compiler_->compile(source, opts);
    opts.target = sandbox::CompileTarget::kPtx;
    opts.ptx_arch = sm_;  // the parameter lists of kernels this GPU alone can run
    auto ptx = compiler_->compile(source, opts);
    out.cache_hit = compiler_->cache_stats().hits >= hits + 2;
    out.compile_ms = (out.cache_hit ? 0.0 : cubin->compile_ms + ptx->compile_ms);
    if (!cubin->ok || !ptx->ok) {
      out.outcome = {Verdict::kCompileError, cubin->ok ? ptx->log : cubin->log};
      return out;
    }
    auto params = entry_params(ptx->ptx);
    if (!params) {
      out.outcome = {Verdict::kSandboxError,
                     "reading the PTX parameter lists: " + params.status().message()};
      return out;
    }
    cudaLibrary_t lib = nullptr;
    cudaError_t e =
        cudaLibraryLoadData(&lib, cubin->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess) {
      // A lost context (a sticky error of an earlier job's kernel) fails every later load:
      // then this worker must be replaced, not keep answering SANDBOX_ERROR.
      if (cudaStreamSynchronize(stream_) != cudaSuccess) broken_ = true;
      cudaGetLastError();
      out.outcome = {Verdict::kSandboxError, "loading the CUBIN: " + cuda_text(e)};
      return out;
    }
    auto program = std::make_unique<CubinProgram>(lib);
    for (const auto& expr : names) {
      const std::string* lowered = cubin->lowered_name(expr);
      const std::string mangled = lowered ? *lowered : expr;
      CubinProgram::Kernel k;
      if (cudaLibraryGetKernel(&k.handle, lib, mangled.c_str()) != cudaSuccess) {
        cudaGetLastError();
        continue;  // reported as "no kernel named" at launch, like the CPU path
      }
      if (auto it = params->find(mangled); it != params->end()) k.params = it->second;
      program->add(expr, std::move(k));
    }
    out.program = std::move(program);
    return out;
  }

  // Every copy and fill goes on stream_, the stream the kernels run on: the legacy default
  // stream does not order against a cudaStreamNonBlocking stream, so a kernel could otherwise
  // read its inputs or guard bytes before they land.
  //
  // And every one of them, as every launch, runs under the shared lock: another worker's timed
  // run holds it exclusively, so no zeroing, upload, read-back or scrub of this job lands inside
  // its timed window (processes share a GPU by time-slicing, and a cached reference time
  // measured beside one would skew every later speedup of its task). The lock is kept while
  // work is queued and let go once the stream is idle (read, release, synchronize, a failed
  // allocation). Not covered: loading and unloading a compiled module (kilobytes).
  Expected<uint64_t> allocate(size_t bytes) override {
    LEAP_RETURN_IF_ERROR(hold_device());
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, bytes, stream_);
    if (e != cudaSuccess) {
      cudaGetLastError();
      if (p) cudaFree(p);
      // Nothing of this job's may stay queued holding the device: a job that stops here releases
      // no buffer (which would let it go), and its worker would idle holding it.
      cudaStreamSynchronize(stream_);
      let_device_go();
      return internal_error("cudaMalloc of " + std::to_string(bytes) + " bytes: " + cuda_text(e));
    }
    sizes_[reinterpret_cast<uint64_t>(p)] = bytes;
    return reinterpret_cast<uint64_t>(p);
  }
  // Scrubbed before it is freed: a later job's kernel reading out of bounds in reused device
  // memory must not find a reference's outputs there. The wait makes the scrub complete before
  // the memory can be handed out again. The scrub runs even when the lock cannot be had by the
  // deadline: no job's data may outlive it.
  void release(uint64_t address) override {
    (void)hold_device();
    auto it = sizes_.find(address);
    if (it != sizes_.end()) {
      cudaMemsetAsync(reinterpret_cast<void*>(address), 0, it->second, stream_);
      sizes_.erase(it);
    }
    // An error here is a sticky one a kernel left behind: the context is lost.
    if (cudaStreamSynchronize(stream_) != cudaSuccess) broken_ = true;
    cudaFree(reinterpret_cast<void*>(address));
    let_device_go();
  }
  // From pageable host memory the call returns once `data` has been staged, so the caller may
  // reuse it; the copy itself is ordered before the kernels that follow on stream_.
  Status write(uint64_t address, const void* data, size_t bytes) override {
    LEAP_RETURN_IF_ERROR(hold_device());
    cudaError_t e = cudaMemcpyAsync(reinterpret_cast<void*>(address), data, bytes,
                                    cudaMemcpyHostToDevice, stream_);
    return e == cudaSuccess ? Status::ok()
                            : internal_error("cudaMemcpy to device: " + cuda_text(e));
  }
  Status read(uint64_t address, void* data, size_t bytes) override {
    LEAP_RETURN_IF_ERROR(hold_device());
    cudaError_t e = cudaMemcpyAsync(data, reinterpret_cast<const void*>(address), bytes,
                                    cudaMemcpyDeviceToHost, stream_);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    let_device_go();
    return e == cudaSuccess ? Status::ok()
                            : internal_error("cudaMemcpy from device: " + cuda_text(e));
  }

  Status copy(uint64_t to, uint64_t from, size_t bytes) override {
    LEAP_RETURN_IF_ERROR(hold_device());
    cudaError_t e = cudaMemcpyAsync(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from),
                                    bytes, cudaMemcpyDeviceToDevice, stream_);
    return e == cudaSuccess ? Status::ok()
                            : internal_error("cudaMemcpy on the device: " + cuda_text(e));
  }

  ExecOutcome launch(const sandbox::Program& program, const sandbox::PlannedLaunch& l,
                     const std::vector<std::vector<uint8_t>>& args) override {
    auto* k = static_cast<const CubinProgram&>(program).kernel(l.kernel);
    if (!k) return {Verdict::kLaunchError, "no kernel named " + l.kernel};
    if (timing_) return launch_kernel(*k, l, args);
    // Held shared while this job's kernels run; released by synchronize(), or here when the
    // launch fails (then no synchronize follows), once the plan's earlier kernels are done, so
    // that no timed run of another worker overlaps them.
    if (!lock_.shared(deadline_)) return lock_wait_error();
    ExecOutcome r = launch_kernel(*k, l, args);
    if (!r.ok()) {
      // An earlier kernel's fault that the wait reports came first: it is the verdict.
      if (cudaError_t s = cudaStreamSynchronize(stream_); s != cudaSuccess && r.verdict == Verdict::kLaunchError)
        r = device_fault(s);
      lock_.release();
    }
    return r;
  }

  ExecOutcome launch_kernel(CubinProgram::Kernel& k, const sandbox::PlannedLaunch& l,
                            const std::vector<std::vector<uint8_t>>& args) {
    if (l.shared_bytes > 48 * 1024 && k.shared_limit_set < static_cast<int>(l.shared_bytes)) {
      cudaError_t e = cudaFuncSetAttribute(reinterpret_cast<const void*>(k.handle),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(l.shared_bytes));
      if (e != cudaSuccess) {
        cudaGetLastError();
        return {Verdict::kLaunchError, "dynamic shared memory of " +
                                           std::to_string(l.shared_bytes) +
                                           " bytes: " + cuda_text(e)};
      }
      k.shared_limit_set = static_cast<int>(l.shared_bytes);
    }
    std::vector<void*> ptrs;
    for (const auto& a : args) ptrs.push_back(const_cast<uint8_t*>(a.data()));
    cudaError_t e = cudaLaunchKernel(
        reinterpret_cast<const void*>(k.handle), dim3(l.grid[0], l.grid[1], l.grid[2]),
        dim3(l.block[0], l.block[1], l.block[2]), ptrs.data(), l.shared_bytes, stream_);
    if (e == cudaSuccess) return {};
    cudaGetLastError();
    // An earlier kernel's fault can surface at this launch (an illegal address in the first
    // kernel of a plan shows at the second one's): such an error is sticky, so the stream's
    // synchronize fails too, the context is lost and the worker must be replaced. Otherwise it
    // was this launch's own error (its configuration, resources, memory).
    if (cudaError_t sticky = cudaStreamSynchronize(stream_); sticky != cudaSuccess)
      return device_fault(sticky);
    return {Verdict::kLaunchError,
            cuda_text(e) + " (too many registers or too much shared memory for this block size?)"};
  }

  // A fault of the candidate's kernels that leaves the context unusable: the verdict, and the
  // worker is replaced after it replies.
  ExecOutcome device_fault(cudaError_t e) {
    broken_ = true;
    if (e == cudaErrorIllegalAddress || e == cudaErrorMisalignedAddress ||
        e == cudaErrorInvalidAddressSpace)
      return {Verdict::kMemoryViolation, cuda_text(e)};
    return {Verdict::kRuntimeError, cuda_text(e)};
  }

  ExecOutcome synchronize() override {
    // While timing, the stop event goes in right behind the kernels, before the host waits.
    if (timing_) {
      cudaError_t r = cudaEventRecord(stop_, stream_);
      if (r != cudaSuccess) {
        cudaGetLastError();
        cudaStreamSynchronize(stream_);
        return {Verdict::kSandboxError, "cudaEventRecord (stop): " + cuda_text(r)};
      }
    }
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (!timing_) lock_.release();
    if (e == cudaSuccess) return {};
    return device_fault(e);
  }

  ExecOutcome time(const std::function<ExecOutcome()>& run_once,
                   const std::function<Status()>& prepare, const sandbox::TimingOptions& o,
                   sandbox::Timing* out) override {
    // This job's queued uploads finish under its shared hold, before another job could time.
    if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return device_fault(e);
    if (!lock_.exclusive(deadline_)) return lock_wait_error();
    timing_ = true;
    ExecOutcome result = timed_runs(run_once, prepare, o, out);
    timing_ = false;
    lock_.release();
    return result;
  }

  void set_deadline(std::chrono::steady_clock::time_point deadline) override { deadline_ = deadline; }

 private:
  // The device was held past this job's deadline by another job (a kernel that hangs keeps it
  // until its worker is killed): not the candidate's fault, and retried.
  // The shared lock for this job's device work (already held while timing, exclusively).
  Status hold_device() {
    if (timing_ || lock_.shared(deadline_)) return Status::ok();
    return internal_error(lock_wait_error().message);
  }
  // Once the stream is idle: nothing of this job's is on the device.
  void let_device_go() {
    if (!timing_) lock_.release();
  }
  static ExecOutcome lock_wait_error() {
    return {Verdict::kSandboxError,
            "the GPU was held by another sandbox job's kernels until this job's deadline (a kernel that hangs "
            "holds it until its worker is killed): retry"};
  }
  // A failure of the executor's own timing calls: not the candidate's fault.
  static ExecOutcome sandbox_error(const char* what, cudaError_t e) {
    cudaGetLastError();
    return {Verdict::kSandboxError, std::string(what) + ": " + cuda_text(e)};
  }

  ExecOutcome timed_runs(const std::function<ExecOutcome()>& run_once,
                         const std::function<Status()>& prepare, const sandbox::TimingOptions& o,
                         sandbox::Timing* out) {
    for (int i = 0; i < o.warmups; ++i) {
      if (Status st = prepare(); !st) return {Verdict::kSandboxError, st.message()};
      ExecOutcome r = run_once();
      if (!r.ok()) return r;
    }
    std::vector<double> times;
    double total = 0;
    ExecOutcome result;
    while (static_cast<int>(times.size()) < o.max_launches &&
           (static_cast<int>(times.size()) < o.min_launches || total < o.min_total_ms)) {
      if (Status st = prepare(); !st) return {Verdict::kSandboxError, st.message()};
      const int fill = static_cast<int>(times.size() & 0xff);
      cudaError_t e = cudaMemsetAsync(flush_, fill, flush_bytes_, stream_);
      if (e != cudaSuccess) return sandbox_error("the L2 flush (cudaMemsetAsync)", e);
      e = cudaEventRecord(start_, stream_);
      if (e != cudaSuccess) return sandbox_error("cudaEventRecord (start)", e);
      result = run_once();  // ends in synchronize(), which records stop_
      if (!result.ok()) break;
      float ms = 0;
      e = cudaEventElapsedTime(&ms, start_, stop_);
      if (e != cudaSuccess) return sandbox_error("cudaEventElapsedTime", e);
      times.push_back(ms);
      total += ms;
    }
    if (!result.ok()) return result;
    std::sort(times.begin(), times.end());
    out->launches = static_cast<int>(times.size());
    out->median_ms = times.empty() ? 0 : times[times.size() / 2];
    return {};
  }

  std::shared_ptr<sandbox::NvrtcCompiler> compiler_;
  int sm_;
  DeviceLock lock_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::map<uint64_t, size_t> sizes_;  // live allocations
  bool broken_ = false;
  bool timing_ = false;
};

}  // namespace

Expected<std::unique_ptr<sandbox::Executor>> make_gpu_executor(
    std::shared_ptr<sandbox::NvrtcCompiler> compiler, int device) {
  LEAP_ASSIGN_OR_RETURN(DeviceInfo info, probe_devices());
  if (info.count == 0) return unsupported("no GPU for the GPU executor: " + info.reason);
  if (device < 0 || device >= info.count)
    return invalid_input(fmt::format("GPU {} requested but {} visible", device, info.count));
  cudaError_t e = cudaSetDevice(device);
  int major = 0, minor = 0, l2 = 0;
  char bus_id[32] = {0};
  if (e == cudaSuccess) e = cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  if (e != cudaSuccess)
    return internal_error("initialising GPU " + std::to_string(device) + ": " + cuda_text(e));
  std::unique_ptr<GpuExecutor> executor(
      new GpuExecutor(std::move(compiler), bus_id, major * 10 + minor, static_cast<size_t>(l2)));
  LEAP_RETURN_IF_ERROR(executor->init());
  return std::unique_ptr<sandbox::Executor>(std::move(executor));
}

}  // namespace leap::cuda
