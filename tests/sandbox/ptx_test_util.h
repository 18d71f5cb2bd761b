// Helpers for the PTX interpreter tests: compile CUDA source with NVRTC to PTX, load it into the
// interpreter, move buffers in and out of GlobalMemory, and build argument lists.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/nvrtc_compiler.h"
#include "sandbox/ptx/interpreter.h"

namespace leap::sandbox::ptx::testing {

// One compiled source: its module and the mangled names of the requested kernels.
struct Compiled {
  std::unique_ptr<Module> module;
  std::shared_ptr<const CompileResult> result;
  std::string status;  // empty when everything worked
  const std::string& name(const std::string& expr) const { return *result->lowered_name(expr); }
};

inline Compiled compile(NvrtcCompiler& compiler, const std::string& source,
                        std::vector<std::string> kernels) {
  Compiled c;
  CompileOptions o;
  o.name_expressions = std::move(kernels);
  c.result = compiler.compile(source, o);
  if (!c.result->ok) {
    c.status = "compile error: " + c.result->log;
    return c;
  }
  auto m = Module::parse(c.result->ptx);
  if (!m) {
    c.status = "parse error: " + m.status().message();
    return c;
  }
  c.module = std::make_unique<Module>(std::move(*m));
  return c;
}

template <class T>
uint64_t upload(GlobalMemory& mem, const std::vector<T>& v) {
  const uint64_t a = mem.allocate(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(mem.host_pointer(a), v.data(), v.size() * sizeof(T));
  return a;
}
template <class T>
std::vector<T> download(GlobalMemory& mem, uint64_t a, size_t n) {
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), mem.host_pointer(a), n * sizeof(T));
  return v;
}

class Args {
 public:
  template <class T>
  Args& add(T v) {
    std::vector<uint8_t> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    list_.push_back(std::move(b));
    return *this;
  }
  Args& ptr(uint64_t a) { return add<uint64_t>(a); }
  const std::vector<std::vector<uint8_t>>& list() const { return list_; }

 private:
  std::vector<std::vector<uint8_t>> list_;
};

inline LaunchDims dims(uint32_t grid, uint32_t block, uint32_t smem = 0) {
  LaunchDims d;
  d.grid[0] = grid;
  d.block[0] = block;
  d.dynamic_shared_bytes = smem;
  return d;
}

}  // namespace leap::sandbox::ptx::testing
