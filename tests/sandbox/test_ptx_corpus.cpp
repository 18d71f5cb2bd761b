// The kernel corpus: varied hand-written CUDA kernels compiled with NVRTC to PTX, run in the
// interpreter and checked against plain C++ references. Each kernel exercises a family of PTX
// the policy's answers and the task references produce (grid-stride loops, shared-memory
// tiling, warp shuffles, templates, float4, half/bfloat16, dynamic shared memory, atomics,
// multi-launch plans, device function calls, ragged sizes).
#include <cmath>

#include "common/rng.h"
#include "ptx_test_util.h"

namespace leap::sandbox::ptx {
namespace {

using testing::Args;
using testing::compile;
using testing::dims;
using testing::download;
using testing::upload;

std::vector<float> normal(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

class PtxCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc_available()) GTEST_SKIP() << "built without NVRTC";
  }
  NvrtcCompiler compiler_;
  GlobalMemory mem_;
};

TEST_F(PtxCorpus, ElementwiseReluMulWithRaggedSize) {
  auto c = compile(compiler_, R"(
__global__ void relu_mul(const float* __restrict__ a, const float* __restrict__ b,
                         float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i], 0.f) * b[i];
}
)",
                   {"relu_mul"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 4099;
  auto a = normal(n, 1), b = normal(n, 2);
  uint64_t da = upload(mem_, a), db = upload(mem_, b),
           dout = upload(mem_, std::vector<float>(n, NAN));
  auto r = launch(*c.module, c.name("relu_mul"), dims((n + 255) / 256, 256),
                  Args().ptr(da).ptr(db).ptr(dout).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<float>(mem_, dout, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], std::max(a[i], 0.f) * b[i]) << i;
  EXPECT_GT(r.instructions, static_cast<uint64_t>(n) * 5);
}

TEST_F(PtxCorpus, TiledMatmulWithSharedMemoryAndRaggedSizes) {
  auto c = compile(compiler_, R"(
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
)",
                   {"matmul"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int M = 37, N = 29, K = 45;
  auto A = normal(M * K, 3), B = normal(K * N, 4);
  uint64_t dA = upload(mem_, A), dB = upload(mem_, B),
           dC = upload(mem_, std::vector<float>(M * N, NAN));
  LaunchDims d;
  d.grid[0] = (N + 15) / 16;
  d.grid[1] = (M + 15) / 16;
  d.block[0] = d.block[1] = 16;
  auto r = launch(*c.module, c.name("matmul"), d,
                  Args().ptr(dA).ptr(dB).ptr(dC).add<int>(M).add<int>(N).add<int>(K).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto C = download<float>(mem_, dC, M * N);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += static_cast<double>(A[i * K + k]) * B[k * N + j];
      ASSERT_NEAR(C[i * N + j], ref, 1e-4) << i << "," << j;
    }
  }
}

TEST_F(PtxCorpus, WarpShuffleBlockReductionWithAtomicAdd) {
  auto c = compile(compiler_, R"(
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float warp_sums[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (lane == 0) atomicAdd(out, v);
  }
}
)",
                   {"block_sum"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 10007;
  auto x = normal(n, 5);
  uint64_t dx = upload(mem_, x), dout = upload(mem_, std::vector<float>(1, 0.f));
  auto r = launch(*c.module, c.name("block_sum"), dims(7, 192),
                  Args().ptr(dx).ptr(dout).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  double ref = 0;
  for (float v : x) ref += v;
  EXPECT_NEAR(download<float>(mem_, dout, 1)[0], ref, 1e-2);
}

TEST_F(PtxCorpus, TemplatesResolvedByNameExpression) {
  auto c = compile(compiler_, R"(
template <int BLOCK, typename T>
__global__ void axpy(T alpha, const T* x, T* y, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
)",
                   {"axpy<128, float>", "axpy<64, double>"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 1000;
  auto xf = normal(n, 6), yf = normal(n, 7);
  std::vector<double> xd(xf.begin(), xf.end()), yd(yf.begin(), yf.end());
  uint64_t dxf = upload(mem_, xf), dyf = upload(mem_, yf), dxd = upload(mem_, xd),
           dyd = upload(mem_, yd);
  auto r1 = launch(*c.module, c.name("axpy<128, float>"), dims((n + 127) / 128, 128),
                   Args().add<float>(2.5f).ptr(dxf).ptr(dyf).add<int>(n).list(), mem_);
  ASSERT_EQ(r1.outcome, RunOutcome::kOk) << r1.message;
  auto r2 = launch(*c.module, c.name("axpy<64, double>"), dims((n + 63) / 64, 64),
                   Args().add<double>(-1.5).ptr(dxd).ptr(dyd).add<int>(n).list(), mem_);
  ASSERT_EQ(r2.outcome, RunOutcome::kOk) << r2.message;
  auto of = download<float>(mem_, dyf, n);
  auto od = download<double>(mem_, dyd, n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(of[i], std::fma(2.5f, xf[i], yf[i])) << i;
    ASSERT_EQ(od[i], std::fma(-1.5, xd[i], yd[i])) << i;
  }
}

TEST_F(PtxCorpus, Float4LoadsWithScalarTail) {
  auto c = compile(compiler_, R"(
__global__ void scale4(const float* __restrict__ x, float* __restrict__ y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n4 = n / 4;
  if (i < n4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x *= s; v.y *= s; v.z *= s; v.w *= s;
    reinterpret_cast<float4*>(y)[i] = v;
  }
  if (i == 0) for (int j = n4 * 4; j < n; ++j) y[j] = x[j] * s;
}
)",
                   {"scale4"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  EXPECT_NE(c.result->ptx.find("ld.global.nc.v4.f32"), std::string::npos);
  const int n = 1027;
  auto x = normal(n, 8);
  uint64_t dx = upload(mem_, x), dy = upload(mem_, std::vector<float>(n, NAN));
  auto r = launch(*c.module, c.name("scale4"), dims(3, 128),
                  Args().ptr(dx).ptr(dy).add<float>(0.5f).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto y = download<float>(mem_, dy, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] * 0.5f) << i;
}

TEST_F(PtxCorpus, DynamicSharedMemoryReduction) {
  auto c = compile(compiler_, R"(
__global__ void row_max(const float* x, float* out, int cols) {
  extern __shared__ float buf[];
  const float* row = x + blockIdx.x * cols;
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  buf[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}
)",
                   {"row_max"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int rows = 5, cols = 333;
  auto x = normal(rows * cols, 9);
  uint64_t dx = upload(mem_, x), dout = upload(mem_, std::vector<float>(rows, NAN));
  auto r = launch(*c.module, c.name("row_max"), dims(rows, 128, 128 * sizeof(float)),
                  Args().ptr(dx).ptr(dout).add<int>(cols).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto out = download<float>(mem_, dout, rows);
  for (int i = 0; i < rows; ++i) {
    float ref = -INFINITY;
    for (int j = 0; j < cols; ++j) ref = std::max(ref, x[i * cols + j]);
    ASSERT_EQ(out[i], ref) << i;
  }
}

TEST_F(PtxCorpus, SharedAndGlobalAtomics) {
  auto c = compile(compiler_, R"(
__global__ void histogram(const int* v, int n, unsigned* hist, int* max_out, float* fmax_out) {
  __shared__ unsigned local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[v[i] & 15], 1u);
    atomicMax(max_out, v[i]);
    // float max through compare-and-swap
    float f = (float)v[i] * 0.5f;
    int* addr = (int*)fmax_out;
    int old = *addr, assumed;
    do {
      assumed = old;
      if (__int_as_float(assumed) >= f) break;
      old = atomicCAS(addr, assumed, __float_as_int(f));
    } while (old != assumed);
  }
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}
)",
                   {"histogram"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 3001;
  Rng rng(10);
  std::vector<int> v(n);
  for (auto& e : v) e = static_cast<int>(rng.below(100000));
  uint64_t dv = upload(mem_, v), dh = upload(mem_, std::vector<unsigned>(16, 0)),
           dm = upload(mem_, std::vector<int>(1, -1)),
           df = upload(mem_, std::vector<float>(1, -1.f));
  auto r = launch(*c.module, c.name("histogram"), dims(4, 96),
                  Args().ptr(dv).add<int>(n).ptr(dh).ptr(dm).ptr(df).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  std::vector<unsigned> ref(16, 0);
  int mx = -1;
  for (int e : v) {
    ++ref[e & 15];
    mx = std::max(mx, e);
  }
  EXPECT_EQ(download<unsigned>(mem_, dh, 16), ref);
  EXPECT_EQ(download<int>(mem_, dm, 1)[0], mx);
  EXPECT_EQ(download<float>(mem_, df, 1)[0], mx * 0.5f);
}

TEST_F(PtxCorpus, MultiLaunchSoftmaxPlan) {
  auto c = compile(compiler_, R"(
__global__ void row_stats(const float* x, float* mx, float* sum, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= gridDim.x * blockDim.x) return;
  const float* row = x + r * cols;
  float m = __int_as_float(0xff800000);
  for (int j = 0; j < cols; ++j) m = fmaxf(m, row[j]);
  float s = 0.f;
  for (int j = 0; j < cols; ++j) s += expf(row[j] - m);
  mx[r] = m; sum[r] = s;
}
__global__ void normalize(const float* x, const float* mx, const float* sum, float* y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) { int r = i / cols; y[i] = expf(x[i] - mx[r]) / sum[r]; }
}
)",
                   {"row_stats", "normalize"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int rows = 6, cols = 77;
  auto x = normal(rows * cols, 11);
  uint64_t dx = upload(mem_, x), dm = upload(mem_, std::vector<float>(rows, 0)),
           ds = upload(mem_, std::vector<float>(rows, 0)),
           dy = upload(mem_, std::vector<float>(rows * cols, NAN));
  auto r1 = launch(*c.module, c.name("row_stats"), dims(1, rows),
                   Args().ptr(dx).ptr(dm).ptr(ds).add<int>(cols).list(), mem_);
  ASSERT_EQ(r1.outcome, RunOutcome::kOk) << r1.message;
  auto r2 =
      launch(*c.module, c.name("normalize"), dims((rows * cols + 63) / 64, 64),
             Args().ptr(dx).ptr(dm).ptr(ds).ptr(dy).add<int>(rows).add<int>(cols).list(), mem_);
  ASSERT_EQ(r2.outcome, RunOutcome::kOk) << r2.message;
  auto y = download<float>(mem_, dy, rows * cols);
  for (int i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < cols; ++j) m = std::max<double>(m, x[i * cols + j]);
    for (int j = 0; j < cols; ++j) s += std::exp(x[i * cols + j] - m);
    for (int j = 0; j < cols; ++j)
      ASSERT_NEAR(y[i * cols + j], std::exp(x[i * cols + j] - m) / s, 1e-6);
  }
}

TEST_F(PtxCorpus, DeviceFunctionCallsWithStructArguments) {
  auto c = compile(compiler_, R"(
struct Affine { float scale; int shift; double bias; };
__device__ __noinline__ float apply(float x, Affine p) { return x * p.scale + p.shift + (float)p.bias; }
__device__ __noinline__ int collatz_steps(int v) {
  int s = 0;
  while (v != 1 && s < 1000) { v = (v & 1) ? 3 * v + 1 : v / 2; ++s; }
  return s;
}
__global__ void affine(const float* x, float* y, int* steps, Affine p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = apply(x[i], p); steps[i] = collatz_steps(i + 1); }
}
)",
                   {"affine"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  EXPECT_NE(c.result->ptx.find("call.uni"), std::string::npos);
  struct Affine {
    float scale;
    int shift;
    double bias;
  } p{1.5f, -3, 0.25};
  const KernelInfo* k = c.module->find_kernel(c.name("affine"));
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->params.size(), 5u);
  EXPECT_EQ(k->params[3].size, sizeof(Affine));
  const int n = 100;
  auto x = normal(n, 12);
  uint64_t dx = upload(mem_, x), dy = upload(mem_, std::vector<float>(n, NAN)),
           dsteps = upload(mem_, std::vector<int>(n, -1));
  auto r = launch(*c.module, c.name("affine"), dims(2, 64),
                  Args().ptr(dx).ptr(dy).ptr(dsteps).add<Affine>(p).add<int>(n).list(), mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  auto y = download<float>(mem_, dy, n);
  auto steps = download<int>(mem_, dsteps, n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], std::fma(x[i], 1.5f, -3.f) + 0.25f) << i;
    int v = i + 1, s = 0;
    while (v != 1 && s < 1000) {
      v = (v & 1) ? 3 * v + 1 : v / 2;
      ++s;
    }
    ASSERT_EQ(steps[i], s) << i;
  }
}

TEST_F(PtxCorpus, ModuleVariablesConstantTablesAndPersistence) {
  const char* src = R"(
__constant__ float kTable[8] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f};
__device__ unsigned int launches = 0;
__device__ float scratch[64];
__global__ void lookup(const int* idx, float* out, unsigned* seen, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { scratch[i % 64] = kTable[idx[i] & 7]; out[i] = scratch[i % 64] * 2.f; }
  if (i == 0) *seen = atomicAdd(&launches, 1u);
}
)";
  auto c = compile(compiler_, src, {"lookup"});
  ASSERT_TRUE(c.status.empty()) << c.status;
  const int n = 50;
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = i * 3;
  uint64_t di = upload(mem_, idx), dout = upload(mem_, std::vector<float>(n)),
           dseen = upload(mem_, std::vector<unsigned>(1));
  auto args = Args().ptr(di).ptr(dout).ptr(dseen).add<int>(n).list();
  for (unsigned launch_no = 0; launch_no < 3; ++launch_no) {
    auto r = launch(*c.module, c.name("lookup"), dims(1, 64), args, mem_);
    ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
    EXPECT_EQ(download<unsigned>(mem_, dseen, 1)[0], launch_no);  // the counter persists
  }
  auto out = download<float>(mem_, dout, n);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 2.f * (0.5f + static_cast<float>((i * 3) & 7))) << i;
  // A module parsed afresh starts from the initial values again.
  auto again = Module::parse(c.result->ptx);
  ASSERT_TRUE(again.has_value());
  auto r = launch(*again, c.name("lookup"), dims(1, 64), args, mem_);
  ASSERT_EQ(r.outcome, RunOutcome::kOk) << r.message;
  EXPECT_EQ(download<unsigned>(mem_, dseen, 1)[0], 0u);
}

}  // namespace
}  // namespace leap::sandbox::ptx
