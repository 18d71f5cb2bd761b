// NVRTC compilation of candidate kernels: CUDA C++ source to PTX (the CPU path, run by the PTX
// interpreter, fixed target compute_80) or to CUBIN (the GPU path, for a configurable sm_XX).
//
// Invariants:
//  - a compile failure is data (CompileResult::ok == false with a bounded log), never a crash
//    nor a Status: a bad kernel from the policy is an expected outcome and a reward signal;
//  - the log kept for feedback holds at most the first 20 error lines and at most 2 KB
//    (docs/design.md, Isolation: defaults);
//  - every kernel named in a launch line is registered as a name expression, so templates such
//    as `scale<128>` resolve to their mangled (lowered) names;
//  - results are cached by a hash of source and options; the cache is thread-safe and bounded,
//    and a cached result is immutable (shared_ptr<const>), so callers may hold it freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace leap::sandbox {

enum class CompileTarget { kPtx, kCubin };

// The project's fixed PTX target for the interpreter path.
inline constexpr int kPtxComputeArch = 80;

struct CompileOptions {
  CompileTarget target = CompileTarget::kPtx;
  int sm_arch = 90;  // the CUBIN's sm_XX; ignored for PTX
  // The PTX's compute_XX: the interpreter's fixed one, or a GPU's own (its executor reads the
  // kernels' parameter lists from PTX, and a kernel for that GPU alone, a Hopper cluster kernel
  // say, does not compile for compute_80).
  int ptx_arch = kPtxComputeArch;
  // Kernels to resolve, as written in launch lines: "relu", "scale<128>", "ns::k<float, 4>".
  std::vector<std::string> name_expressions;
  // Appended after the project's options ("-DTILE=16", "--use_fast_math", ...).
  std::vector<std::string> extra_options;
};

struct CompileResult {
  bool ok = false;
  std::string log;  // bounded (first 20 error lines, ≤ 2 KB); may hold warnings when ok
  std::string ptx;  // target kPtx: the PTX text
  std::vector<uint8_t> cubin;  // target kCubin: the CUBIN image
  // (name expression, lowered/mangled name), in the order the expressions were given.
  std::vector<std::pair<std::string, std::string>> lowered_names;
  double compile_ms = 0.0;  // wall time of the NVRTC compile that produced this result

  // The mangled name NVRTC gave `expression`, or nullptr when it was not registered.
  const std::string* lowered_name(std::string_view expression) const;
};

struct CompilerConfig {
  // Folder holding cuda_fp16.h and cuda_bf16.h; empty: find_cuda_include_dir().
  std::string cuda_include_dir;
  size_t cache_max_entries = 1024;      // 0 disables the cache
  size_t cache_max_bytes = 256u << 20;  // sum of source, log, PTX and CUBIN sizes kept
};

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  size_t entries = 0;
  size_t bytes = 0;
};

// Where the toolkit's headers are: $LEAP_CUDA_INCLUDE if set, else the build's CUDA toolkit
// include folder (baked in at configure time), else $CUDA_HOME/include or $CUDA_PATH/include.
// Empty when none is known.
std::string find_cuda_include_dir();

// Cuts a raw NVRTC log down for feedback: the first `max_error_lines` error lines (each with
// the source excerpt NVRTC prints under it), at most `max_bytes` bytes, and a note saying how
// many errors were left out. A log without error lines keeps its first lines instead.
std::string bound_compile_log(std::string_view raw, size_t max_error_lines = 20,
                              size_t max_bytes = 2048);

// True when this build links NVRTC (LEAP_HAVE_CUDA); otherwise every compile fails with a log
// that says so.
bool nvrtc_available();
// NVRTC's version as "MAJOR.MINOR" (what docs/ptx_coverage.md was generated with), or "" in a
// build without NVRTC.
std::string nvrtc_version();

// Compiles with NVRTC and caches the results. Thread-safe: one compiler may serve many threads
// (NVRTC programs are independent; only the cache is shared, behind a mutex).
class NvrtcCompiler {
 public:
  explicit NvrtcCompiler(CompilerConfig config = {});
  NvrtcCompiler(const NvrtcCompiler&) = delete;
  NvrtcCompiler& operator=(const NvrtcCompiler&) = delete;

  std::shared_ptr<const CompileResult> compile(std::string_view source,
                                               const CompileOptions& options);
  // Compiles without touching the cache (for benchmarks of the cold path).
  CompileResult compile_uncached(std::string_view source, const CompileOptions& options) const;

  CacheStats cache_stats() const;
  void clear_cache();
  const std::string& cuda_include_dir() const { return include_dir_; }

 private:
  // The cache key: every input that changes the output, as one string; hashed for the map.
  std::string make_key(std::string_view source, const CompileOptions& options) const;
  void insert(const std::string& key, std::shared_ptr<const CompileResult> result);

  CompilerConfig config_;
  std::string include_dir_;
  std::string cccl_dir_;  // include_dir_/cccl where the toolkit has it (CUDA 13), else empty

  struct Entry {
    std::string key;
    std::shared_ptr<const CompileResult> result;
    size_t bytes = 0;
  };
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_multimap<uint64_t, std::list<Entry>::iterator> index_;
  CacheStats stats_;
};

}  // namespace leap::sandbox
