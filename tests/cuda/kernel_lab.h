// Test harness for the CUDA backend's own kernels (cuda/kernels/*.cuh): compiles a kernel header
// with NVRTC, runs its kernels in the PTX interpreter, and compares their outputs with the CPU
// backend by normalised mean squared error, sum (got - want)^2 / sum want^2 (ggml's
// test-backend-ops rule). Inputs are drawn in fp32 and rounded to the storage type first, so
// both sides see the same values and only the kernel's own rounding and order show.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../sandbox/ptx_test_util.h"
#include "common/rng.h"
#include "tasks/dtype_convert.h"

namespace leap::cuda::testing {

using sandbox::ptx::GlobalMemory;
using sandbox::ptx::LaunchDims;
using sandbox::ptx::testing::Args;

// The two storage types, with the error bound each op is held to.
struct F32 {
  static constexpr const char* kName = "float";
  static constexpr bool kBf16 = false;
  static constexpr double kTol = 1e-10;  // fp32 against fp32: only summation order differs
};
struct BF16 {
  static constexpr const char* kName = "__nv_bfloat16";
  static constexpr bool kBf16 = true;
  static constexpr double kTol = 2e-5;  // outputs rounded to 8 significant bits
};

inline float round_bf16(float x) {
  return static_cast<float>(tasks::bf16_bits_to_double(tasks::bf16_bits_from_double(x)));
}

// Normal(0, scale) values, rounded to bf16 when `bf16`.
inline std::vector<float> randn(size_t n, uint64_t seed, bool bf16, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = static_cast<float>(rng.normal()) * scale;
    if (bf16) x = round_bf16(x);
  }
  return v;
}

// Fails the test when nmse(got, want) > tol (NaN included); prints the figure either way.
inline double expect_nmse(const std::string& what, const std::vector<float>& got,
                          const std::vector<float>& want, double tol) {
  EXPECT_EQ(got.size(), want.size()) << what;
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    ref += static_cast<double>(want[i]) * want[i];
  }
  const double nmse = err / (ref > 0 ? ref : 1e-300);
  std::printf("  %-44s nmse %.3e (bound %.0e)\n", what.c_str(), nmse, tol);
  EXPECT_LE(nmse, tol) << what;
  return nmse;
}

inline LaunchDims grid3(unsigned gx, unsigned gy, unsigned gz, unsigned block, unsigned smem = 0) {
  LaunchDims d;
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = gz;
  d.block[0] = block;
  d.dynamic_shared_bytes = smem;
  return d;
}

// One kernel header compiled for a set of instantiations, and the interpreter's memory.
class KernelLab {
 public:
  // kernels: name expressions such as "rmsnorm_forward<float>", resolved in the kernels'
  // namespace.
  void build(const std::string& header, const std::vector<std::string>& kernels) {
    sandbox::CompileOptions o;
    for (const auto& k : kernels) o.name_expressions.push_back(kNamespace + k);
    o.extra_options = {"-I" + std::string(LEAP_SOURCE_DIR)};
    result_ = compiler_.compile("#include \"cuda/kernels/" + header + "\"\n", o);
    ASSERT_TRUE(result_->ok) << header << ": " << result_->log;
    auto m = sandbox::ptx::Module::parse(result_->ptx);
    ASSERT_TRUE(m.has_value()) << header << ": " << m.status().message();
    module_ = std::make_unique<sandbox::ptx::Module>(std::move(*m));
  }

  // A buffer of fp32 values stored as float or bf16.
  uint64_t put(bool bf16, const std::vector<float>& v) {
    if (!bf16) return sandbox::ptx::testing::upload(mem, v);
    std::vector<uint16_t> b(v.size());
    for (size_t i = 0; i < v.size(); ++i) b[i] = tasks::bf16_bits_from_double(v[i]);
    return sandbox::ptx::testing::upload(mem, b);
  }
  std::vector<float> get(bool bf16, uint64_t a, size_t n) {
    if (!bf16) return sandbox::ptx::testing::download<float>(mem, a, n);
    auto b = sandbox::ptx::testing::download<uint16_t>(mem, a, n);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(tasks::bf16_bits_to_double(b[i]));
    return v;
  }
  template <class V>
  uint64_t put_raw(const std::vector<V>& v) {
    return sandbox::ptx::testing::upload(mem, v);
  }
  template <class V>
  std::vector<V> get_raw(uint64_t a, size_t n) {
    return sandbox::ptx::testing::download<V>(mem, a, n);
  }

  // Runs one launch and fails the test unless the interpreter reports kOk.
  void run(const std::string& kernel, const LaunchDims& dims, const Args& args) {
    ASSERT_TRUE(module_) << "build() first";
    const std::string* lowered = result_->lowered_name(kNamespace + kernel);
    ASSERT_NE(lowered, nullptr) << kernel << " was not instantiated";
    auto r = sandbox::ptx::launch(*module_, *lowered, dims, args.list(), mem);
    ASSERT_EQ(r.outcome, sandbox::ptx::RunOutcome::kOk)
        << kernel << ": " << sandbox::ptx::outcome_name(r.outcome) << ": " << r.message;
  }

  // Evaluates integer constant expressions of a header (its launch-geometry helpers) on the
  // device, so that tests launch with exactly the geometry the header documents.
  std::vector<long long> probe(const std::string& header, const std::vector<std::string>& exprs) {
    std::string src = "#include \"cuda/kernels/" + header + "\"\n" +
                      "using namespace leap::cuda::kernels;\n" +
                      "__global__ void leap_probe(long long* out) {\n";
    for (size_t i = 0; i < exprs.size(); ++i)
      src += "  out[" + std::to_string(i) + "] = (long long)(" + exprs[i] + ");\n";
    src += "}\n";
    sandbox::CompileOptions o;
    o.name_expressions = {"leap_probe"};
    o.extra_options = {"-I" + std::string(LEAP_SOURCE_DIR)};
    auto r = compiler_.compile(src, o);
    EXPECT_TRUE(r->ok) << r->log;
    if (!r->ok) return std::vector<long long>(exprs.size(), 0);
    auto m = sandbox::ptx::Module::parse(r->ptx);
    EXPECT_TRUE(m.has_value());
    if (!m) return std::vector<long long>(exprs.size(), 0);
    GlobalMemory scratch;
    const uint64_t out = scratch.allocate(exprs.size() * sizeof(long long));
    auto res = sandbox::ptx::launch(*m, *r->lowered_name("leap_probe"), LaunchDims{},
                                    Args().ptr(out).list(), scratch);
    EXPECT_EQ(res.outcome, sandbox::ptx::RunOutcome::kOk) << res.message;
    return sandbox::ptx::testing::download<long long>(scratch, out, exprs.size());
  }

  GlobalMemory mem;

 private:
  inline static const std::string kNamespace = "leap::cuda::kernels::";
  sandbox::NvrtcCompiler compiler_;
  std::shared_ptr<const sandbox::CompileResult> result_;
  std::unique_ptr<sandbox::ptx::Module> module_;
};

// "name<float>" / "name<__nv_bfloat16>", and with extra template arguments.
template <class TypeParam>
std::string inst(const std::string& name, const std::string& extra = "") {
  return name + "<" + TypeParam::kName + extra + ">";
}

}  // namespace leap::cuda::testing
