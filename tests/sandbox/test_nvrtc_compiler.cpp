// Tests of the NVRTC compiler: PTX and CUBIN output, template kernels through name
// expressions, half/bfloat16 headers, compile errors returned as data with a bounded log, and
// the cache (hits, keys that differ by options, the size bound, concurrent use).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/answer.h"
#include "sandbox/nvrtc_compiler.h"
#include "sandbox/ptx/parser.h"

namespace leap::sandbox {
namespace {

constexpr const char* kRelu = R"(
__global__ void relu(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i], 0.f);
}
)";

CompileOptions ptx_for(std::vector<std::string> names) {
  CompileOptions o;
  o.name_expressions = std::move(names);
  return o;
}

TEST(NvrtcCompiler, CompilesToPtxForComputeArch80) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  auto r = compiler.compile(kRelu, ptx_for({"relu"}));
  ASSERT_TRUE(r->ok) << r->log;
  EXPECT_NE(r->ptx.find(".target sm_80"), std::string::npos);
  ASSERT_NE(r->lowered_name("relu"), nullptr);
  EXPECT_EQ(*r->lowered_name("relu"), "_Z4reluPKfPfi");
  EXPECT_NE(r->ptx.find(".entry _Z4reluPKfPfi"), std::string::npos);
  EXPECT_GT(r->compile_ms, 0.0);
}

TEST(NvrtcCompiler, ResolvesTemplateKernelsByNameExpression) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  const char* src = R"(
template <int BLOCK, typename T>
__global__ void fill(T* out, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = T(BLOCK);
}
)";
  auto r = compiler.compile(src, ptx_for({"fill<128, float>", "fill<64, int>"}));
  ASSERT_TRUE(r->ok) << r->log;
  ASSERT_EQ(r->lowered_names.size(), 2u);
  for (const auto& [expr, lowered] : r->lowered_names) {
    EXPECT_NE(r->ptx.find(".entry " + lowered), std::string::npos) << expr;
  }
  EXPECT_NE(*r->lowered_name("fill<128, float>"), *r->lowered_name("fill<64, int>"));
}

TEST(NvrtcCompiler, FindsHalfAndBfloat16Headers) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  EXPECT_FALSE(compiler.cuda_include_dir().empty());
  const char* src = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void cvt(const float* a, __half* h, __nv_bfloat16* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { h[i] = __float2half(a[i]); b[i] = __float2bfloat16(a[i]); }
}
)";
  auto r = compiler.compile(src, ptx_for({"cvt"}));
  ASSERT_TRUE(r->ok) << r->log;
  EXPECT_NE(r->ptx.find("cvt.rn.f16.f32"), std::string::npos);
}

// Every header an answer may include (check_device_only) compiles, for the interpreter's PTX
// and for a GPU's cubin: CUDA 13 moved the CUDA C++ library that cuda/std/* and
// cooperative_groups.h need into include/cccl, and an allowed header that does not compile would
// make every answer using it a COMPILE_ERROR.
TEST(NvrtcCompiler, CompilesEveryHeaderAnAnswerMayInclude) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  ASSERT_FALSE(allowed_device_headers().empty());
  for (std::string_view header : allowed_device_headers()) {
    const std::string src = "#include <" + std::string(header) + ">\n" +
                            "__global__ void k(int* p) { p[threadIdx.x] = 1; }\n";
    ASSERT_TRUE(check_device_only(src)) << header;
    auto ptx = compiler.compile(src, ptx_for({"k"}));
    EXPECT_TRUE(ptx->ok) << header << ": " << ptx->log;
    CompileOptions cubin = ptx_for({"k"});
    cubin.target = CompileTarget::kCubin;
    cubin.sm_arch = 90;
    auto bin = compiler.compile(src, cubin);
    EXPECT_TRUE(bin->ok) << header << ": " << bin->log;
  }
}

// A GPU's executor reads the kernels' parameter lists from PTX at the GPU's own arch: a kernel
// for Hopper alone (a thread-block cluster) does not compile for the interpreter's compute_80,
// compiles at compute_90, and its entry's parameters parse.
TEST(NvrtcCompiler, AHopperOnlyKernelCompilesToPtxAtItsOwnArch) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  const char* src = R"(
__global__ void __cluster_dims__(2, 1, 1) k(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i];
}
)";
  EXPECT_FALSE(compiler.compile(src, ptx_for({"k"}))->ok) << "compute_80 has no clusters";
  CompileOptions at90 = ptx_for({"k"});
  at90.ptx_arch = 90;
  auto r = compiler.compile(src, at90);
  ASSERT_TRUE(r->ok) << r->log;
  auto parsed = ptx::parse_ptx(r->ptx);
  ASSERT_TRUE(parsed.has_value()) << parsed.status().message();
  const std::string* lowered = r->lowered_name("k");
  ASSERT_NE(lowered, nullptr);
  bool found = false;
  for (const auto& f : parsed->functions) {
    if (!f.is_entry || f.name != *lowered) continue;
    found = true;
    ASSERT_EQ(f.params.size(), 3u);
    EXPECT_EQ(f.params[0].type, ".u64");
    EXPECT_EQ(f.params[2].type, ".u32");
  }
  EXPECT_TRUE(found) << r->ptx;
}

TEST(NvrtcCompiler, CompilesToCubin) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  CompileOptions o = ptx_for({"relu"});
  o.target = CompileTarget::kCubin;
  o.sm_arch = 90;
  auto r = compiler.compile(kRelu, o);
  ASSERT_TRUE(r->ok) << r->log;
  ASSERT_GE(r->cubin.size(), 4u);
  EXPECT_EQ(r->cubin[0], 0x7f);  // an ELF image
  EXPECT_EQ(r->cubin[1], 'E');
  EXPECT_TRUE(r->ptx.empty());
}

TEST(NvrtcCompiler, ReturnsSyntaxErrorsAsDataWithBoundedLog) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  std::string src = "__global__ void k(float* o) {\n";
  for (int i = 0; i < 60; ++i) src += "  o[0] = undefined_" + std::to_string(i) + ";\n";
  src += "}\n";
  auto r = compiler.compile(src, ptx_for({"k"}));
  EXPECT_FALSE(r->ok);
  EXPECT_LE(r->log.size(), 2048u);
  EXPECT_NE(r->log.find("undefined_0"), std::string::npos) << r->log;
  EXPECT_NE(r->log.find("more errors not shown"), std::string::npos) << r->log;
  EXPECT_EQ(r->log.find("undefined_59"), std::string::npos);
}

// An error inside an allowed header names the header as the answer's #include does, not by the
// host's toolkit folder (the log is the policy's feedback and goes into the trajectory file).
TEST(NvrtcCompiler, HeaderErrorsDoNotNameTheHostsFolders) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  auto r = compiler.compile("#define __half float\n#include <cuda_fp16.h>\n" + std::string(kRelu), ptx_for({"relu"}));
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->log.find("cuda_fp16.h("), std::string::npos) << r->log;
  const std::string dir = find_cuda_include_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(r->log.find(dir), std::string::npos) << r->log;
}

TEST(NvrtcCompiler, HostFunctionCallIsACompileError) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  const char* src = R"(
void host_only(float* p) { p[0] = 1; }
__global__ void k(float* o) { host_only(o); }
)";
  auto r = compiler.compile(src, ptx_for({"k"}));
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->log.find("error"), std::string::npos) << r->log;
}

TEST(NvrtcCompiler, MissingKernelNameIsACompileError) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  auto r = compiler.compile(kRelu, ptx_for({"relu_typo"}));
  EXPECT_FALSE(r->ok);
  EXPECT_FALSE(r->log.empty());
}

TEST(NvrtcCompiler, CachesBySourceAndOptions) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  auto a = compiler.compile(kRelu, ptx_for({"relu"}));
  auto b = compiler.compile(kRelu, ptx_for({"relu"}));
  EXPECT_EQ(a.get(), b.get());  // the same cached object
  CompileOptions other = ptx_for({"relu"});
  other.extra_options = {"-DUNUSED=1"};
  auto c = compiler.compile(kRelu, other);
  EXPECT_NE(a.get(), c.get());
  auto d = compiler.compile(std::string(kRelu) + "\n// changed\n", ptx_for({"relu"}));
  EXPECT_NE(a.get(), d.get());
  CacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.entries, 3u);
}

TEST(NvrtcCompiler, CacheEvictsLeastRecentlyUsed) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  CompilerConfig config;
  config.cache_max_entries = 2;
  NvrtcCompiler compiler(config);
  auto src = [](int i) { return std::string(kRelu) + "// v" + std::to_string(i) + "\n"; };
  auto first = compiler.compile(src(0), ptx_for({"relu"}));
  compiler.compile(src(1), ptx_for({"relu"}));
  compiler.compile(src(0), ptx_for({"relu"}));  // touch 0: 1 is now the oldest
  compiler.compile(src(2), ptx_for({"relu"}));  // evicts 1
  EXPECT_EQ(compiler.cache_stats().entries, 2u);
  EXPECT_EQ(compiler.compile(src(0), ptx_for({"relu"})).get(), first.get());
  const uint64_t misses = compiler.cache_stats().misses;
  compiler.compile(src(1), ptx_for({"relu"}));
  EXPECT_EQ(compiler.cache_stats().misses, misses + 1);
}

TEST(NvrtcCompiler, IsSafeToShareAcrossThreads) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        auto r = compiler.compile(std::string(kRelu) + "// " + std::to_string(i % 2) + "\n",
                                  ptx_for({"relu"}));
        ok[t] += r->ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 3);
  EXPECT_EQ(compiler.cache_stats().entries, 2u);
}

TEST(FindCudaIncludeDir, EnvironmentOverrideWins) {
  const char* old = std::getenv("LEAP_CUDA_INCLUDE");
  const std::string saved = old ? old : "";
  setenv("LEAP_CUDA_INCLUDE", "/opt/some/cuda/include", 1);
  EXPECT_EQ(find_cuda_include_dir(), "/opt/some/cuda/include");
  CompilerConfig config;
  NvrtcCompiler compiler(config);
  EXPECT_EQ(compiler.cuda_include_dir(), "/opt/some/cuda/include");
  if (old) {
    setenv("LEAP_CUDA_INCLUDE", saved.c_str(), 1);
  } else {
    unsetenv("LEAP_CUDA_INCLUDE");
  }
  EXPECT_NE(find_cuda_include_dir(), "/opt/some/cuda/include");
}

TEST(BoundCompileLog, KeepsFirstErrorsWithinTheByteLimit) {
  std::string raw = "kernel.cu(1): warning: something minor\n  x\n";
  for (int i = 0; i < 30; ++i) {
    raw += "kernel.cu(" + std::to_string(i + 2) + "): error: bad thing " + std::to_string(i) +
           "\n    code line\n    ^\n\n";
  }
  std::string out = bound_compile_log(raw, 20, 2048);
  EXPECT_LE(out.size(), 2048u);
  EXPECT_EQ(out.find("warning"), std::string::npos);
  EXPECT_NE(out.find("bad thing 0\n"), std::string::npos);
  EXPECT_NE(out.find("bad thing 19\n"), std::string::npos);
  EXPECT_EQ(out.find("bad thing 20\n"), std::string::npos);
  EXPECT_NE(out.find("10 more errors not shown"), std::string::npos);
  std::string tiny = bound_compile_log(raw, 20, 200);
  EXPECT_LE(tiny.size(), 200u);
  EXPECT_NE(tiny.find("more errors not shown"), std::string::npos);
}

}  // namespace
}  // namespace leap::sandbox
