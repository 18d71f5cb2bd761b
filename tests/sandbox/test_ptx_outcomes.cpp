// Each failure outcome of the PTX interpreter, reached by a kernel written for it: out-of-bounds
// writes and reads (kMemoryViolation naming the instruction and address), misaligned vector
// access, an infinite loop (a deterministic kTimeout), a missing __syncthreads() in a
// shared-memory reduction (caught as a race whatever the schedule), an instruction the
// interpreter does not implement (kUnsupported at parse time, naming it) and argument errors.
// Also the negative cases: correctly synchronised code is never reported.
#include "ptx_test_util.h"

namespace leap::sandbox::ptx {
namespace {

using testing::Args;
using testing::compile;
using testing::dims;
using testing::download;
using testing::upload;

class PtxOutcomes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  NvrtcCompiler compiler_;
  GlobalMemory mem_;
};

constexpr const char* kCopy = R"(
__global__ void copy_all(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i];   // no bounds check: threads past n write past the end
}
__global__ void copy_shifted(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i + 3];   // reads past the end
}
__global__ void copy4(const float* x, float* y) {
  int i = threadIdx.x;
  reinterpret_cast<float4*>(y)[i] = reinterpret_cast<const float4*>(x + 1)[i];  // misaligned
}
)";

TEST(PtxGlobalMemory, AddressesRestartOnlyWhenNothingIsLive) {
  GlobalMemory m;
  const uint64_t a = m.allocate(100), b = m.allocate(50);
  m.release(a);
  const uint64_t c = m.allocate(100);
  EXPECT_NE(c, a);  // b is live: a stale pointer to a must not reach a new allocation
  EXPECT_GT(c, b);
  m.release(b);
  m.release(c);
  EXPECT_EQ(m.allocate(100), a);  // a new trial sees the same addresses as the first
}

TEST_F(PtxOutcomes, OutOfBoundsWriteIsAMemoryViolation) {
  auto c = compile(compiler_, kCopy, {"copy_all"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 100;
  uint64_t dx = upload(mem_, std::vector<float>(128, 1.f)),
           dy = upload(mem_, std::vector<float>(n));
  auto r = launch(*c.module, c.name("copy_all"), dims(1, 128),
                  Args().ptr(dx).ptr(dy).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kMemoryViolation);
  EXPECT_NE(r.message.find("write"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("st.global.f32"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("past its end"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("thread (100,0,0)"), std::string::npos) << r.message;
}

TEST_F(PtxOutcomes, OutOfBoundsReadIsAMemoryViolation) {
  auto c = compile(compiler_, kCopy, {"copy_shifted"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 64;
  uint64_t dx = upload(mem_, std::vector<float>(n, 1.f)), dy = upload(mem_, std::vector<float>(n));
  auto r = launch(*c.module, c.name("copy_shifted"), dims(1, 64),
                  Args().ptr(dx).ptr(dy).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kMemoryViolation);
  EXPECT_NE(r.message.find("read"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("ld.global"), std::string::npos) << r.message;
  // The address is named exactly: x + 4 * 64 (the first element past the end).
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(dx + 4 * 64));
  EXPECT_NE(r.message.find(addr), std::string::npos) << r.message;
}

TEST_F(PtxOutcomes, MisalignedVectorAccessIsAMemoryViolation) {
  auto c = compile(compiler_, kCopy, {"copy4"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dx = upload(mem_, std::vector<float>(64, 1.f)),
           dy = upload(mem_, std::vector<float>(64));
  auto r = launch(*c.module, c.name("copy4"), dims(1, 4), Args().ptr(dx).ptr(dy).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kMemoryViolation);
  EXPECT_NE(r.message.find("misaligned"), std::string::npos) << r.message;
}

TEST_F(PtxOutcomes, NullPointerIsAMemoryViolation) {
  auto c = compile(compiler_, kCopy, {"copy_all"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dx = upload(mem_, std::vector<float>(32, 1.f));
  auto r = launch(*c.module, c.name("copy_all"), dims(1, 32),
                  Args().ptr(dx).ptr(0).add<int>(32).list(), mem_);
  EXPECT_EQ(r.outcome, RunOutcome::kMemoryViolation) << r.message;
}

TEST_F(PtxOutcomes, InfiniteLoopIsADeterministicTimeout) {
  auto c = compile(compiler_, R"(
__global__ void spin(volatile int* flag, int* out) {
  int k = 0;
  while (flag[0] == 0) { ++k; }   // nobody ever sets the flag
  out[threadIdx.x] = k;
}
)",
                   {"spin"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dflag = upload(mem_, std::vector<int>(1, 0)), dout = upload(mem_, std::vector<int>(64));
  RunOptions o;
  o.instruction_budget = 1'000'000;
  auto r1 =
      launch(*c.module, c.name("spin"), dims(2, 64), Args().ptr(dflag).ptr(dout).list(), mem_, o);
  ASSERT_EQ(r1.outcome, RunOutcome::kTimeout) << r1.message;
  EXPECT_LE(r1.instructions, o.instruction_budget);
  EXPECT_GT(r1.instructions, o.instruction_budget * 9 / 10);  // the rest paid for block set-up
  auto r2 =
      launch(*c.module, c.name("spin"), dims(2, 64), Args().ptr(dflag).ptr(dout).list(), mem_, o);
  EXPECT_EQ(r2.message, r1.message);  // deterministic, down to the thread and instruction
}

constexpr const char* kReductions = R"(
// Missing the barrier between the loads into shared memory and the tree reduction.
__global__ void sum_no_sync(const float* x, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
  for (int stride = 64; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
// Missing the barrier inside the loop only.
__global__ void sum_no_loop_sync(const float* x, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  for (int stride = 64; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
// Correct: block barriers, then a warp-synchronous tail ordered by __syncwarp().
__global__ void sum_ok(const float* x, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  for (int stride = 64; stride > 16; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    float v = s[threadIdx.x];
    for (int stride = 16; stride > 0; stride >>= 1) {
      v += s[threadIdx.x + stride];
      __syncwarp();
      s[threadIdx.x] = v;
      __syncwarp();
    }
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
)";

TEST_F(PtxOutcomes, MissingSyncthreadsIsCaughtAsARace) {
  auto c = compile(compiler_, kReductions, {"sum_no_sync", "sum_no_loop_sync", "sum_ok"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 7);
  uint64_t dx = upload(mem_, x), dout = upload(mem_, std::vector<float>(2));
  for (const char* k : {"sum_no_sync", "sum_no_loop_sync"}) {
    auto r = launch(*c.module, c.name(k), dims(2, 128), Args().ptr(dx).ptr(dout).list(), mem_);
    ASSERT_EQ(r.outcome, RunOutcome::kRuntimeError) << k;
    EXPECT_NE(r.message.find("race"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("__syncthreads"), std::string::npos) << r.message;
  }
  auto ok =
      launch(*c.module, c.name("sum_ok"), dims(2, 128), Args().ptr(dx).ptr(dout).list(), mem_);
  ASSERT_EQ(ok.outcome, RunOutcome::kOk) << ok.message;
  auto out = download<float>(mem_, dout, 2);
  for (int b = 0; b < 2; ++b) {
    float ref = 0;
    for (int i = 0; i < 128; ++i) ref += x[b * 128 + i];
    EXPECT_EQ(out[b], ref);
  }
}

TEST_F(PtxOutcomes, UnimplementedInstructionIsUnsupportedAtParseTime) {
  auto c = compile(compiler_, R"(
#include <mma.h>
using namespace nvcuda;
__global__ void tc(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
)",
                   {"tc"});
  ASSERT_FALSE(c.status.empty());
  EXPECT_NE(c.status.find("parse error"), std::string::npos) << c.status;
  EXPECT_NE(c.status.find("unsupported PTX instruction"), std::string::npos) << c.status;
  EXPECT_NE(c.status.find("wmma"), std::string::npos) << c.status;
  auto m = Module::parse(c.result->ptx);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
}

TEST_F(PtxOutcomes, MalformedPtxIsAnError) {
  auto m = Module::parse(".version 9.0\n.target sm_80\n.visible .entry k( { add.s32 %r1 ;");
  EXPECT_FALSE(m.has_value());
}

// Inline asm reaches the PTX as written, so an answer can write module-level PTX: what would
// crash or fool the interpreter is refused when the module is decoded. A second definition of a
// kernel (its arguments checked against one, the other run); an alignment that pads the
// parameter or module area by gigabytes (an allocation failure killed the worker: a
// SANDBOX_ERROR, a void sample, instead of a verdict); a call chain deep enough to exhaust the
// decoder's stack.
TEST_F(PtxOutcomes, HostileModulesAreRefusedWhenDecoded) {
  const std::string head = ".version 9.0\n.target sm_80\n.address_size 64\n";
  auto twice = Module::parse(head + ".visible .entry k(.param .u32 a)\n{\nret;\n}\n"
                                    ".visible .entry k(.param .u32 a, .param .u32 b)\n{\nret;\n}\n");
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.status().message().find("function k is defined twice"), std::string::npos)
      << twice.status().message();
  for (const char* align : {"4294967295", "3", "8192"}) {
    auto param = Module::parse(head + ".visible .entry k(.param .u32 a, .param .align " + align +
                               " .u32 b)\n{\nret;\n}\n");
    ASSERT_FALSE(param.has_value()) << align;
    EXPECT_NE(param.status().message().find(std::string(".align ") + align), std::string::npos)
        << param.status().message();
  }
  auto global = Module::parse(head + ".global .b8 a[1];\n.global .align 4294967295 .b8 b[1];\n");
  ASSERT_FALSE(global.has_value());
  auto aligned = Module::parse(head + ".global .align 4096 .b8 b[4];\n.visible .entry k()\n{\nret;\n}\n");
  EXPECT_TRUE(aligned.has_value()) << aligned.status().message();
  std::string chain = head;
  for (int f = 5000; f >= 1; --f)
    chain += ".func f" + std::to_string(f) + "()\n{\n" +
             (f < 5000 ? "call f" + std::to_string(f + 1) + ";\n" : std::string()) + "ret;\n}\n";
  auto deep = Module::parse(chain);
  ASSERT_FALSE(deep.has_value());
  EXPECT_EQ(deep.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(deep.status().message().find("5000 functions"), std::string::npos) << deep.status().message();
}

// An unsized module array with an initializer takes the initializer's length, and the variable
// placed after it keeps its own value (sized 0, the initializer was copied past the module data's
// end, over the heap).
TEST_F(PtxOutcomes, AnUnsizedInitializedModuleArrayTakesItsInitializersLength) {
  std::string ptx = ".version 9.0\n.target sm_80\n.address_size 64\n.global .align 4 .u32 g[] = {";
  for (int i = 1; i <= 40; ++i) ptx += std::to_string(i) + (i < 40 ? ", " : "};\n");
  ptx += ".global .align 4 .u32 h[1] = {99};\n"
         ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<4>;\n"
         "ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\nmov.u64 %rd2, g;\n"
         "ld.global.u32 %r1, [%rd2+156];\nmov.u64 %rd3, h;\nld.global.u32 %r2, [%rd3];\n"
         "st.global.u32 [%rd1], %r1;\nst.global.u32 [%rd1+4], %r2;\nret;\n}\n";
  auto m = Module::parse(ptx);
  ASSERT_TRUE(m.has_value()) << m.status().message();
  const uint64_t dout = upload(mem_, std::vector<uint32_t>(2, 0));
  auto r = launch(*m, "k", dims(1, 1), Args().ptr(dout).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  EXPECT_EQ(download<uint32_t>(mem_, dout, 2), (std::vector<uint32_t>{40, 99}));
}

TEST_F(PtxOutcomes, WrongArgumentsAreRejectedBeforeRunning) {
  auto c = compile(compiler_, kCopy, {"copy_all"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  auto r1 = launch(*c.module, c.name("copy_all"), dims(1, 32), Args().ptr(0).list(), mem_);
  EXPECT_EQ(r1.outcome, RunOutcome::kRuntimeError);
  EXPECT_NE(r1.message.find("takes 3 arguments"), std::string::npos) << r1.message;
  auto r2 = launch(*c.module, c.name("copy_all"), dims(1, 32),
                   Args().ptr(0).ptr(0).add<int64_t>(3).list(), mem_);
  EXPECT_EQ(r2.outcome, RunOutcome::kRuntimeError);
  auto r3 = launch(*c.module, "no_such_kernel", dims(1, 32), {}, mem_);
  EXPECT_EQ(r3.outcome, RunOutcome::kRuntimeError);
  EXPECT_EQ(r2.instructions + r3.instructions, 0u);
}

TEST_F(PtxOutcomes, InstructionCountsAreDeterministic) {
  auto c = compile(compiler_, kReductions, {"sum_ok"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dx = upload(mem_, std::vector<float>(256, 1.f)),
           dout = upload(mem_, std::vector<float>(2));
  auto r1 =
      launch(*c.module, c.name("sum_ok"), dims(2, 128), Args().ptr(dx).ptr(dout).list(), mem_);
  auto r2 =
      launch(*c.module, c.name("sum_ok"), dims(2, 128), Args().ptr(dx).ptr(dout).list(), mem_);
  ASSERT_EQ(r1.outcome, RunOutcome::kOk) << r1.message;
  EXPECT_EQ(r1.instructions, r2.instructions);
  EXPECT_GT(r1.instructions, 256u * 10);
}

TEST_F(PtxOutcomes, PrintfIsAcceptedAndTrapIsARuntimeError) {
  auto c = compile(compiler_, R"(
__global__ void talk(int* out, int n) {
  int i = threadIdx.x;
  if (i == 0) printf("n = %d, first = %f\n", n, 1.5);
  if (i < n) out[i] = i;
}
__global__ void trap_if(int* out, int n) {
  if (threadIdx.x == n) __trap();
  out[threadIdx.x] = 1;
}
)",
                   {"talk", "trap_if"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dout = upload(mem_, std::vector<int>(32, -1));
  auto r =
      launch(*c.module, c.name("talk"), dims(1, 32), Args().ptr(dout).add<int>(32).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  EXPECT_EQ(download<int>(mem_, dout, 32)[31], 31);
  auto t =
      launch(*c.module, c.name("trap_if"), dims(1, 32), Args().ptr(dout).add<int>(5).list(), mem_);
  EXPECT_EQ(t.outcome, RunOutcome::kRuntimeError);
  EXPECT_NE(t.message.find("trap"), std::string::npos) << t.message;
}

TEST_F(PtxOutcomes, DivergentBarrierDeadlockIsARuntimeError) {
  // Half the block waits at a barrier inside a branch while the other half waits at another:
  // on a GPU this hangs or is undefined; here it ends with a clear error, never a hang.
  auto c = compile(compiler_, R"(
__global__ void split(int* out) {
  __shared__ int s[64];
  if (threadIdx.x < 32) {
    s[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
  } else {
    while (out[0] != 12345) { __nanosleep(10); }   // waits for a flag nobody sets
  }
}
)",
                   {"split"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dout = upload(mem_, std::vector<int>(64, 0));
  RunOptions o;
  o.instruction_budget = 100'000;
  auto r = launch(*c.module, c.name("split"), dims(1, 64), Args().ptr(dout).list(), mem_, o);
  EXPECT_NE(r.outcome, RunOutcome::kOk);
  EXPECT_TRUE(r.outcome == RunOutcome::kTimeout || r.outcome == RunOutcome::kRuntimeError)
      << r.message;
}

TEST_F(PtxOutcomes, HugeGridsOfTinyBlocksTimeOutToo) {
  // Almost no instructions per block, but 40 KB of shared memory to set up for each of a
  // million blocks: block set-up is charged to the budget, so this ends quickly as a timeout.
  auto c = compile(compiler_, R"(
__global__ void tiny(float* out) {
  __shared__ float s[10240];
  s[threadIdx.x] = 1.f;
  if (blockIdx.x == 0) out[0] = s[0];
}
)",
                   {"tiny"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dout = upload(mem_, std::vector<float>(1));
  RunOptions o;
  o.instruction_budget = 50'000'000;
  auto r = launch(*c.module, c.name("tiny"), dims(1'000'000, 1), Args().ptr(dout).list(), mem_, o);
  EXPECT_EQ(r.outcome, RunOutcome::kTimeout) << r.message;
  EXPECT_LT(r.instructions, o.instruction_budget / 10);  // most of the budget went to set-up
}

TEST_F(PtxOutcomes, LegacyWarpSynchronousReductionIsAskedForSyncwarp) {
  // The pre-Volta idiom: a volatile warp reduction that relies on lockstep execution.
  auto c = compile(compiler_, R"(
__device__ void warp_reduce(volatile float* s, int tid) {
  s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; s[tid] += s[tid + 8];
  s[tid] += s[tid + 4]; s[tid] += s[tid + 2]; s[tid] += s[tid + 1];
}
__global__ void legacy_sum(const float* x, float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  if (threadIdx.x < 32) warp_reduce(s, threadIdx.x);
  if (threadIdx.x == 0) out[0] = s[0];
}
)",
                   {"legacy_sum"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  uint64_t dx = upload(mem_, std::vector<float>(64, 1.f)),
           dout = upload(mem_, std::vector<float>(1));
  auto r =
      launch(*c.module, c.name("legacy_sum"), dims(1, 64), Args().ptr(dx).ptr(dout).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kRuntimeError) << r.message;
  EXPECT_NE(r.message.find("__syncwarp"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace leap::sandbox::ptx
