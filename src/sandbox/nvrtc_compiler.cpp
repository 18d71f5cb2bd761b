// NVRTC compilation with a bounded log and a thread-safe LRU cache (see nvrtc_compiler.h).
// Every NVRTC call's failure becomes part of the result's log: nothing here aborts on a bad
// candidate. The program handle is destroyed on every path by a small RAII guard.
#include "sandbox/nvrtc_compiler.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#if LEAP_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace leap::sandbox {

namespace {

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

bool has_fp16_header(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / "cuda_fp16.h", ec);
}

// NVRTC error lines look like "kernel.cu(3): error: identifier ..." or "error: ...".
bool is_error_line(std::string_view line) {
  return line.find(": error") != std::string_view::npos || line.find("error:") == 0 ||
         line.find(": catastrophic error") != std::string_view::npos;
}

bool is_diagnostic_line(std::string_view line) {
  return is_error_line(line) || line.find(": warning") != std::string_view::npos ||
         line.find(": remark") != std::string_view::npos;
}

}  // namespace

const std::string* CompileResult::lowered_name(std::string_view expression) const {
  for (const auto& [expr, lowered] : lowered_names) {
    if (expr == expression) return &lowered;
  }
  return nullptr;
}

std::string find_cuda_include_dir() {
  if (const char* env = std::getenv("LEAP_CUDA_INCLUDE"); env && *env) return env;
#ifdef LEAP_CUDA_TOOLKIT_INCLUDE_DIR
  if (has_fp16_header(LEAP_CUDA_TOOLKIT_INCLUDE_DIR)) return LEAP_CUDA_TOOLKIT_INCLUDE_DIR;
#endif
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* env = std::getenv(var); env && *env) {
      std::string dir = std::string(env) + "/include";
      if (has_fp16_header(dir)) return dir;
    }
  }
  return {};
}

std::string bound_compile_log(std::string_view raw, size_t max_error_lines, size_t max_bytes) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < raw.size();) {
    size_t end = raw.find('\n', pos);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view line = raw.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = end + 1;
  }
  size_t total_errors = 0;
  for (auto l : lines) total_errors += is_error_line(l);

  std::string out;
  size_t kept_errors = 0;
  bool truncated = false;
  // With errors present, keep each error line and the excerpt lines under it (up to the next
  // diagnostic); warnings are dropped, as they crowd out what the author must fix.
  bool in_error = false;
  for (auto line : lines) {
    if (total_errors > 0) {
      if (is_diagnostic_line(line)) {
        in_error = is_error_line(line);
        if (in_error && kept_errors == max_error_lines) break;
        if (in_error) ++kept_errors;
      }
      if (!in_error || line.find_first_not_of(" \t") == std::string_view::npos) continue;
    } else if (kept_errors++ == max_error_lines) {
      truncated = true;
      break;
    }
    if (out.size() + line.size() + 1 > max_bytes) {
      truncated = true;
      break;
    }
    out.append(line);
    out.push_back('\n');
  }
  if (total_errors > kept_errors) {
    std::string note =
        "... (" + std::to_string(total_errors - kept_errors) + " more errors not shown)\n";
    while (!out.empty() && out.size() + note.size() > max_bytes) {
      size_t cut = out.rfind('\n', out.size() - 2);
      out.resize(cut == std::string::npos ? 0 : cut + 1);
    }
    out += note;
  } else if (truncated && out.size() + 6 <= max_bytes) {
    out += "...\n";
  }
  return out;
}

#if LEAP_HAVE_NVRTC

bool nvrtc_available() {
  return true;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

// The log with the toolkit's include folders left out of header paths ("cuda_fp16.h(168): ...",
// as the answer's own #include names it): the feedback reaches the policy and the trajectory file,
// and the host's layout is none of their business.
std::string without_folders(std::string log, const std::vector<std::string>& folders) {
  for (const std::string& dir : folders) {
    if (dir.empty()) continue;
    const std::string prefix = dir.back() == '/' ? dir : dir + "/";
    for (size_t at = log.find(prefix); at != std::string::npos; at = log.find(prefix, at))
      log.erase(at, prefix.size());
  }
  return log;
}

}  // namespace

CompileResult NvrtcCompiler::compile_uncached(std::string_view source,
                                              const CompileOptions& options) const {
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult result;
  auto finish = [&](bool ok) {
    result.ok = ok;
    result.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::move(result);
  };
  auto fail = [&](const char* what, nvrtcResult rc) {
    result.log = bound_compile_log(std::string("error: ") + what + ": " + nvrtcGetErrorString(rc));
    return finish(false);
  };

  ProgramGuard guard;
  const std::string src(source);
  nvrtcResult rc = nvrtcCreateProgram(&guard.prog, src.c_str(), "kernel.cu", 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) return fail("creating the NVRTC program", rc);
  for (const auto& expr : options.name_expressions) {
    rc = nvrtcAddNameExpression(guard.prog, expr.c_str());
    if (rc != NVRTC_SUCCESS) return fail(("registering kernel name '" + expr + "'").c_str(), rc);
  }

  std::vector<std::string> opts = {"-std=c++17"};
  if (options.target == CompileTarget::kPtx) {
    opts.push_back("--gpu-architecture=compute_" + std::to_string(options.ptx_arch));
  } else {
    opts.push_back("--gpu-architecture=sm_" + std::to_string(options.sm_arch));
  }
  if (!include_dir_.empty()) opts.push_back("-I" + include_dir_);
  // CUDA 13 keeps the CUDA C++ library (cuda/std/..., and what cooperative_groups.h includes)
  // in include/cccl; without it an allowed header fails to compile.
  if (!cccl_dir_.empty()) opts.push_back("-I" + cccl_dir_);
  opts.insert(opts.end(), options.extra_options.begin(), options.extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  rc = nvrtcCompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());
  result.log = bound_compile_log(without_folders(program_log(guard.prog), {include_dir_, cccl_dir_}));
  if (rc != NVRTC_SUCCESS) {
    if (result.log.empty()) {
      result.log = bound_compile_log(std::string("error: ") + nvrtcGetErrorString(rc));
    }
    return finish(false);
  }

  for (const auto& expr : options.name_expressions) {
    const char* lowered = nullptr;
    rc = nvrtcGetLoweredName(guard.prog, expr.c_str(), &lowered);
    if (rc != NVRTC_SUCCESS || lowered == nullptr) {
      result.log = bound_compile_log("error: kernel '" + expr +
                                     "' named in a launch line was not found in the source");
      return finish(false);
    }
    result.lowered_names.emplace_back(expr, lowered);
  }

  size_t size = 0;
  if (options.target == CompileTarget::kPtx) {
    rc = nvrtcGetPTXSize(guard.prog, &size);
    if (rc != NVRTC_SUCCESS) return fail("reading the PTX size", rc);
    result.ptx.assign(size, '\0');
    rc = nvrtcGetPTX(guard.prog, result.ptx.data());
    if (rc != NVRTC_SUCCESS) return fail("reading the PTX", rc);
    while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  } else {
    rc = nvrtcGetCUBINSize(guard.prog, &size);
    if (rc != NVRTC_SUCCESS) return fail("reading the CUBIN size", rc);
    result.cubin.resize(size);
    rc = nvrtcGetCUBIN(guard.prog, reinterpret_cast<char*>(result.cubin.data()));
    if (rc != NVRTC_SUCCESS) return fail("reading the CUBIN", rc);
  }
  return finish(true);
}

#else  // !LEAP_HAVE_NVRTC

bool nvrtc_available() {
  return false;
}

std::string nvrtc_version() {
  return "";
}

CompileResult NvrtcCompiler::compile_uncached(std::string_view, const CompileOptions&) const {
  CompileResult result;
  result.log = "error: this build of leap has no NVRTC (configured without the CUDA toolkit)\n";
  return result;
}

#endif

NvrtcCompiler::NvrtcCompiler(CompilerConfig config) : config_(std::move(config)) {
  include_dir_ =
      config_.cuda_include_dir.empty() ? find_cuda_include_dir() : config_.cuda_include_dir;
  std::error_code ec;
  if (!include_dir_.empty() && std::filesystem::is_directory(include_dir_ + "/cccl", ec))
    cccl_dir_ = include_dir_ + "/cccl";
}

std::string NvrtcCompiler::make_key(std::string_view source, const CompileOptions& options) const {
  // Length-prefixed fields, so that no two different inputs concatenate to the same key.
  std::string key;
  auto add = [&key](std::string_view field) {
    key += std::to_string(field.size());
    key += ':';
    key += field;
  };
  add(options.target == CompileTarget::kPtx ? "ptx" : "cubin");
  add(options.target == CompileTarget::kPtx ? std::to_string(options.ptx_arch)
                                            : std::to_string(options.sm_arch));
  add(include_dir_);
  for (const auto& e : options.name_expressions) add(e);
  add("|");
  for (const auto& o : options.extra_options) add(o);
  add(source);
  return key;
}

std::shared_ptr<const CompileResult> NvrtcCompiler::compile(std::string_view source,
                                                            const CompileOptions& options) {
  if (config_.cache_max_entries == 0) {
    return std::make_shared<const CompileResult>(compile_uncached(source, options));
  }
  std::string key = make_key(source, options);
  const uint64_t hash = fnv1a64(key);
  {
    std::lock_guard lock(mutex_);
    auto [lo, hi] = index_.equal_range(hash);
    for (auto it = lo; it != hi; ++it) {
      if (it->second->key == key) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++stats_.hits;
        return it->second->result;
      }
    }
    ++stats_.misses;
  }
  // Compiled outside the lock: two threads missing on the same key both compile, which costs
  // time but never correctness, and a slow compile never blocks other threads' hits.
  auto result = std::make_shared<const CompileResult>(compile_uncached(source, options));
  insert(key, result);
  return result;
}

void NvrtcCompiler::insert(const std::string& key, std::shared_ptr<const CompileResult> result) {
  const size_t bytes =
      key.size() + result->log.size() + result->ptx.size() + result->cubin.size() + sizeof(Entry);
  if (bytes > config_.cache_max_bytes) return;
  const uint64_t hash = fnv1a64(key);
  std::lock_guard lock(mutex_);
  auto [lo, hi] = index_.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    if (it->second->key == key) return;  // another thread inserted it meanwhile
  }
  lru_.push_front(Entry{key, std::move(result), bytes});
  index_.emplace(hash, lru_.begin());
  stats_.bytes += bytes;
  while (lru_.size() > config_.cache_max_entries || stats_.bytes > config_.cache_max_bytes) {
    const Entry& victim = lru_.back();
    auto [vlo, vhi] = index_.equal_range(fnv1a64(victim.key));
    for (auto it = vlo; it != vhi; ++it) {
      if (&*it->second == &victim) {
        index_.erase(it);
        break;
      }
    }
    stats_.bytes -= victim.bytes;
    lru_.pop_back();
  }
  stats_.entries = lru_.size();
}

CacheStats NvrtcCompiler::cache_stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void NvrtcCompiler::clear_cache() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  index_.clear();
  stats_.entries = 0;
  stats_.bytes = 0;
}

}  // namespace leap::sandbox
