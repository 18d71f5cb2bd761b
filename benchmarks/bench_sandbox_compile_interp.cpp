// Sandbox compile and interpreter costs (issue 4, Performance):
//  - NVRTC compile latency of level-1-sized kernels: every reference of tasks/level1.jsonl
//    compiled cold, to PTX for compute_80; the median is the figure (target <= 50 ms);
//  - the compile-cache hit path;
//  - PTX parse+decode time;
//  - interpreter throughput in thread-instructions per second on one core (target >= 50 M),
//    on an elementwise kernel, a shared-memory tiled matmul and a warp-shuffle row softmax.
// Run from the repository root (it reads tasks/level1.jsonl), or set LEAP_SOURCE_DIR.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "sandbox/nvrtc_compiler.h"
#include "sandbox/ptx/interpreter.h"

namespace {

using leap::sandbox::CompileOptions;
using leap::sandbox::NvrtcCompiler;
namespace ptx = leap::sandbox::ptx;

struct Source {
  std::string code;
  std::vector<std::string> kernels;
};

// The level-1 references: the code of each answer and the kernels its launch lines name.
std::vector<Source> level1_sources() {
  const char* root = std::getenv("LEAP_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/tasks/level1.jsonl");
  std::vector<Source> out;
  std::string line;
  const std::regex launch(R"(//\s*launch:\s*([A-Za-z_][A-Za-z0-9_:<>, ]*?)\s*<<<)");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    std::string ref = j.at("reference").get<std::string>();
    const size_t a = ref.find("```cuda");
    const size_t b = ref.rfind("```");
    if (a == std::string::npos || b <= a) continue;
    Source s;
    s.code = ref.substr(a + 7, b - a - 7);
    for (std::sregex_iterator it(s.code.begin(), s.code.end(), launch), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (std::find(s.kernels.begin(), s.kernels.end(), name) == s.kernels.end())
        s.kernels.push_back(name);
    }
    out.push_back(std::move(s));
  }
  return out;
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

void BM_NvrtcCompileLevel1(benchmark::State& state) {
  const auto sources = level1_sources();
  if (sources.empty()) {
    state.SkipWithError("tasks/level1.jsonl not found (run from the repository root)");
    return;
  }
  NvrtcCompiler compiler;
  std::vector<double> ms, cpu_ms;
  size_t i = 0, failures = 0;
  for (auto _ : state) {
    const Source& s = sources[i % sources.size()];
    CompileOptions o;
    o.name_expressions = s.kernels;
    const double cpu0 = thread_cpu_ms();
    // A unique comment defeats every cache: this is the cold path.
    const auto r = compiler.compile_uncached(s.code + "\n// " + std::to_string(i), o);
    cpu_ms.push_back(thread_cpu_ms() - cpu0);
    failures += !r.ok;
    ms.push_back(r.compile_ms);
    ++i;
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  state.counters["median_ms"] = ms[ms.size() / 2];
  // The CPU time of the compiling thread: the cost itself, whatever else loads the machine.
  state.counters["median_cpu_ms"] = cpu_ms[cpu_ms.size() / 2];
  state.counters["p90_ms"] = ms[ms.size() * 9 / 10];
  state.counters["kernels"] = static_cast<double>(sources.size());
  state.counters["failures"] = static_cast<double>(failures);
}
BENCHMARK(BM_NvrtcCompileLevel1)->Iterations(100)->Unit(benchmark::kMillisecond);

void BM_NvrtcCacheHit(benchmark::State& state) {
  const auto sources = level1_sources();
  if (sources.empty()) {
    state.SkipWithError("tasks/level1.jsonl not found (run from the repository root)");
    return;
  }
  NvrtcCompiler compiler;
  CompileOptions o;
  o.name_expressions = sources[0].kernels;
  compiler.compile(sources[0].code, o);
  for (auto _ : state) benchmark::DoNotOptimize(compiler.compile(sources[0].code, o));
}
BENCHMARK(BM_NvrtcCacheHit)->Unit(benchmark::kMicrosecond);

constexpr const char* kKernels = R"(
__global__ void gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = x[i];
    y[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
#define TILE 16
__global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && kb < K) ? B[kb * N + col] : 0.f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
__global__ void softmax(const float* x, float* y, int cols) {
  const float* row = x + blockIdx.x * cols;
  float m = -3.0e38f;
  for (int j = threadIdx.x; j < cols; j += 32) m = fmaxf(m, row[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float s = 0.f;
  for (int j = threadIdx.x; j < cols; j += 32) s += __expf(row[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  for (int j = threadIdx.x; j < cols; j += 32) y[blockIdx.x * cols + j] = __expf(row[j] - m) / s;
}
)";

struct Interp {
  std::shared_ptr<const leap::sandbox::CompileResult> compiled;
  std::unique_ptr<ptx::Module> module;
};
// Compiled per benchmark (outside the timed loop), so benchmarks share no state.
Interp make_interp() {
  Interp it;
  NvrtcCompiler compiler;
  CompileOptions o;
  o.name_expressions = {"gelu", "matmul", "softmax"};
  it.compiled = compiler.compile(kKernels, o);
  auto m = ptx::Module::parse(it.compiled->ptx);
  if (m) it.module = std::make_unique<ptx::Module>(std::move(*m));
  return it;
}

std::vector<uint8_t> ptr_arg(uint64_t a) {
  std::vector<uint8_t> v(8);
  std::memcpy(v.data(), &a, 8);
  return v;
}
std::vector<uint8_t> int_arg(int a) {
  std::vector<uint8_t> v(4);
  std::memcpy(v.data(), &a, 4);
  return v;
}

void run_kernel(benchmark::State& state, const char* name, ptx::LaunchDims dims,
                const std::vector<size_t>& buffer_floats, const std::vector<int>& ints) {
  Interp it = make_interp();
  if (!it.module) {
    state.SkipWithError("the benchmark kernels did not compile or parse");
    return;
  }
  ptx::GlobalMemory mem;
  std::vector<std::vector<uint8_t>> args;
  for (size_t n : buffer_floats) {
    const uint64_t a = mem.allocate(n * sizeof(float));
    float* p = reinterpret_cast<float*>(mem.host_pointer(a));
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 37) % 101) / 50.f - 1.f;
    args.push_back(ptr_arg(a));
  }
  for (int v : ints) args.push_back(int_arg(v));
  const std::string mangled = *it.compiled->lowered_name(name);
  uint64_t instructions = 0;
  for (auto _ : state) {
    auto r = ptx::launch(*it.module, mangled, dims, args, mem);
    if (r.outcome != ptx::RunOutcome::kOk) {
      state.SkipWithError(r.message.c_str());
      return;
    }
    instructions += r.instructions;
  }
  state.counters["thread_instr_per_s"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
}

void BM_InterpElementwiseGelu(benchmark::State& state) {
  const int n = 1 << 16;
  ptx::LaunchDims d;
  d.grid[0] = 64;
  d.block[0] = 256;
  run_kernel(state, "gelu", d, {static_cast<size_t>(n), static_cast<size_t>(n)}, {n});
}
BENCHMARK(BM_InterpElementwiseGelu)->Unit(benchmark::kMillisecond);

void BM_InterpTiledMatmul(benchmark::State& state) {
  const int M = 96, N = 96, K = 96;
  ptx::LaunchDims d;
  d.grid[0] = N / 16;
  d.grid[1] = M / 16;
  d.block[0] = d.block[1] = 16;
  run_kernel(state, "matmul", d, {M * K, K * N, M * N}, {M, N, K});
}
BENCHMARK(BM_InterpTiledMatmul)->Unit(benchmark::kMillisecond);

void BM_InterpWarpSoftmax(benchmark::State& state) {
  const int rows = 256, cols = 1000;
  ptx::LaunchDims d;
  d.grid[0] = rows;
  d.block[0] = 32;
  run_kernel(state, "softmax", d, {rows * cols, rows * cols}, {cols});
}
BENCHMARK(BM_InterpWarpSoftmax)->Unit(benchmark::kMillisecond);

void BM_PtxParseDecode(benchmark::State& state) {
  Interp it = make_interp();
  for (auto _ : state) benchmark::DoNotOptimize(ptx::Module::parse(it.compiled->ptx));
}
BENCHMARK(BM_PtxParseDecode)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
