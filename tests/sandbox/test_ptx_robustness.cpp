// Robustness of the PTX interpreter against hostile or broken PTX: thousands of random mutants of
// corpus kernels (registers, immediates, types, branch targets and lines changed, deleted or
// duplicated) are parsed and, when they parse, launched on small buffers. Whatever a mutant does,
// the interpreter must return a result (never crash, hang or touch host memory outside the
// allocations), and every failure must carry a message.
#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>

#include "common/rng.h"
#include "ptx_test_util.h"

namespace leap::sandbox::ptx {
namespace {

using testing::compile;

constexpr const char* kSources = R"(
__device__ __noinline__ float twice(float v) { return 2.f * v; }
__global__ void mix(const float* x, float* y, int* counter, int n) {
  __shared__ float s[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  s[threadIdx.x] = v;
  __syncthreads();
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(counter, 1);
  if (i < n) y[i] = twice(v) + s[(threadIdx.x + 1) % blockDim.x];
  for (int k = 0; k < (i % 5); ++k) y[i % n] += (float)k;
}
)";

// prefix + number + suffix, built without operator+ on literals (GCC 12 warns falsely there).
std::string text(const char* prefix, uint64_t n, const char* suffix = "") {
  std::ostringstream os;
  os << prefix << n << suffix;
  return os.str();
}

std::string mutate(const std::string& ptx, Rng& rng) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = ptx.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(ptx.substr(start, end - start));
  }
  const int edits = 1 + static_cast<int>(rng.below(3));
  for (int e = 0; e < edits; ++e) {
    const size_t k = 8 + rng.below(lines.size() - 8);
    std::string& l = lines[k];
    switch (rng.below(7)) {
      case 0:
        lines.erase(lines.begin() + static_cast<long>(k));
        break;
      case 1:
        lines.insert(lines.begin() + static_cast<long>(k), l);
        break;
      case 2:
        l = std::regex_replace(l, std::regex("%r(d?)[0-9]+"), text("%r$1", rng.below(40)),
                               std::regex_constants::format_first_only);
        break;
      case 3:
        l = std::regex_replace(l, std::regex("\\b[0-9]+\\b"), text("", rng.below(5000)),
                               std::regex_constants::format_first_only);
        break;
      case 4: {
        static const char* const kTypes[] = {".u32", ".s32", ".u64", ".f32",
                                             ".b16", ".f64", ".pred"};
        l = std::regex_replace(l, std::regex("\\.(u|s|b|f)(16|32|64)"), kTypes[rng.below(7)],
                               std::regex_constants::format_first_only);
        break;
      }
      case 5:
        l = std::regex_replace(l, std::regex("\\$L__BB[0-9]+_[0-9]+"),
                               text("$L__BB0_", 1 + rng.below(8)));
        break;
      default:
        l = std::regex_replace(l, std::regex("\\+[0-9]+\\]"), text("+", rng.below(1 << 20), "]"));
        break;
    }
  }
  std::string out;
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

TEST(PtxRobustness, RandomMutantsNeverCrashTheInterpreter) {
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  auto c = compile(compiler, kSources, {"mix"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const std::string& ptx = c.result->ptx;
  // LEAP_PTX_FUZZ_SEED / LEAP_PTX_FUZZ_TRIALS run other or longer campaigns (e.g. under ASan).
  const char* seed_env = std::getenv("LEAP_PTX_FUZZ_SEED");
  const char* trials_env = std::getenv("LEAP_PTX_FUZZ_TRIALS");
  Rng rng(seed_env ? std::strtoull(seed_env, nullptr, 10) : 31);
  const int trials = trials_env ? std::atoi(trials_env) : 1500;
  int parsed = 0, ran_ok = 0, failed = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const std::string m = mutate(ptx, rng);
    auto module = Module::parse(m);
    if (!module) {
      ASSERT_FALSE(module.status().message().empty());
      continue;
    }
    ++parsed;
    for (const KernelInfo& k : module->kernels()) {
      GlobalMemory mem;
      std::vector<std::vector<uint8_t>> args;
      for (const ParamInfo& p : k.params) {
        std::vector<uint8_t> bytes(p.size, 0);
        if (p.size == 8) {
          const uint64_t a = mem.allocate(4096);
          std::memcpy(bytes.data(), &a, 8);
        } else if (p.size == 4) {
          const int n = 100;
          std::memcpy(bytes.data(), &n, 4);
        }
        args.push_back(std::move(bytes));
      }
      RunOptions o;
      o.instruction_budget = 200'000;
      LaunchDims d;
      d.grid[0] = 2;
      d.block[0] = 64;
      RunResult r = launch(*module, k.name, d, args, mem, o);
      if (r.outcome == RunOutcome::kOk) {
        ++ran_ok;
      } else {
        ++failed;
        ASSERT_FALSE(r.message.empty()) << outcome_name(r.outcome);
      }
      ASSERT_LE(r.instructions, o.instruction_budget);
    }
  }
  std::printf("mutants: %d parsed, %d ran to the end, %d failed\n", parsed, ran_ok, failed);
  // The mutants exercise both sides: some still run, some fault or are rejected.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(ran_ok, 10);
  EXPECT_GT(failed, 10);
}

TEST(PtxRobustness, IndependentLaunchesRunConcurrently) {
  // One compiler shared by four threads; each thread its own module, memory and launches. The
  // interpreter keeps no state outside these objects, so the results match a serial run.
  if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  NvrtcCompiler compiler;
  std::vector<std::thread> threads;
  std::vector<int> good(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string src =
          "__global__ void fill(int* out, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) out[i] = i * " +
          std::to_string(t + 2) + ";\n}\n";
      auto c = compile(compiler, src, {"fill"});
      if (!c.status.empty()) return;
      for (int rep = 0; rep < 5; ++rep) {
        GlobalMemory mem;
        const uint64_t out = mem.allocate(1000 * sizeof(int));
        std::vector<std::vector<uint8_t>> args(2);
        args[0].resize(8);
        std::memcpy(args[0].data(), &out, 8);
        const int n = 1000;
        args[1].resize(4);
        std::memcpy(args[1].data(), &n, 4);
        LaunchDims d;
        d.grid[0] = 8;
        d.block[0] = 128;
        if (launch(*c.module, c.name("fill"), d, args, mem).outcome != RunOutcome::kOk) return;
        const int* p = reinterpret_cast<const int*>(mem.host_pointer(out));
        bool ok = true;
        for (int i = 0; i < n; ++i) ok &= p[i] == i * (t + 2);
        good[t] += ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(good[t], 5) << "thread " << t;
}

}  // namespace
}  // namespace leap::sandbox::ptx
