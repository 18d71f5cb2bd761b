// A one-rank NCCL communicator (NCCL cannot put two ranks on one GPU, so this is what one GPU
// can test; the multi-rank summing logic is the MPI path's, tested under mpirun): creation from
// a fresh unique id, a grouped in-place sum of several slices that must wait for the compute
// stream's writes and leave a one-rank sum unchanged, and the polled wait; ZeRO's reduce-scatter
// and all-gather of a piece cut into per-rank slices, likewise; and both sums in bf16
// (optim.grad_comm_dtype) through a staging buffer smaller than the call, whose one-rank result is
// each value rounded to bf16; the all-gather of a model's bf16-only matrices (ncclBfloat16).
// Skips without a GPU or without NCCL in this build.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/bf16.h"
#include "cuda/cuda_backend.h"
#include "tests/gpu/gpu_test_env.h"
#ifdef LEAP_HAVE_NCCL
#include "cuda/nccl_comm.h"
#endif

namespace leap::cuda {
namespace {

#ifdef LEAP_HAVE_NCCL
class NcclOneRank : public GpuTest {
 protected:
  // A one-rank communicator from a fresh unique id (null after a failed assertion).
  std::unique_ptr<NcclComm> one_rank() {
    auto comm = NcclComm::create(*ctx_, NcclComm::make_unique_id(), 0, 1, 30.0);
    EXPECT_TRUE(comm.has_value()) << comm.status().message();
    return comm.has_value() ? std::move(*comm) : nullptr;
  }
  // Every test's backend and one-rank communicator; false after a failed assertion.
  bool start() {
    be_ = std::make_unique<CudaBackend>(*ctx_);
    comm_ = one_rank();
    return comm_ != nullptr;
  }
  std::unique_ptr<CudaBackend> be_;
  std::unique_ptr<NcclComm> comm_;
  // The slices tests' three slices of kSliced floats, and their values doubled on the compute
  // stream just before a collective (which must wait for that write).
  static constexpr size_t kSliced = 3 * 1000 + 17;
  static std::vector<FloatSlice> three_slices(float* dev) {
    return {{dev, 1000}, {dev + 1000, 2000}, {dev + 3000, 17}};
  }
  static void upload_doubled(CudaBackend& be, float* dev, const std::vector<float>& host) {
    be.upload(dev, host.data(), host.size());
    be.add_forward(dev, dev, dev, host.size());
  }
};

TEST_F(NcclOneRank, SumOfSlicesAfterComputeWork) {
  ASSERT_TRUE(start());
  CudaBackend& be = *be_;
  NcclComm* comm = comm_.get();
  EXPECT_EQ(comm->size(), 1);
  const size_t n = kSliced;
  auto host = randn(n, 5);
  float* dev = be.alloc_floats(n);
  for (int round = 0; round < 3; ++round) {
    for (auto& x : host) x += 1.0f;
    upload_doubled(be, dev, host);
    ASSERT_TRUE(comm->sum_async(three_slices(dev)).is_ok());
    ASSERT_TRUE(comm->wait().is_ok());
    std::vector<float> got(n);
    be.download(got.data(), dev, n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], 2.0f * host[i]) << "round " << round << " i " << i;
  }
  be.free_floats(dev);
}

TEST_F(NcclOneRank, ZeroReduceScatterAndAllGatherAfterComputeWork) {
  ASSERT_TRUE(start());
  CudaBackend& be = *be_;
  NcclComm* comm = comm_.get();
  const size_t n = 4099;
  auto host = randn(n, 7);
  float* dev = be.alloc_floats(n + 5);
  const std::vector<int> counts = {static_cast<int>(n)}, displs = {5};  // the piece starts 5 floats in
  for (int round = 0; round < 2; ++round) {
    be.upload(dev + 5, host.data(), n);
    be.add_forward(dev + 5, dev + 5, dev + 5, n);  // on the compute stream, just before
    const std::vector<RankSlices> pieces = {{dev, &counts, &displs}};
    ASSERT_TRUE(round == 0 ? comm->reduce_scatter_async(pieces).is_ok()
                           : comm->allgather_async(pieces).is_ok());
    ASSERT_TRUE(comm->wait().is_ok());
    std::vector<float> got(n);
    be.download(got.data(), dev + 5, n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * host[i]) << "round " << round << " i " << i;
  }
  const std::vector<int> two = {1, 2}, at = {0, 1};
  EXPECT_FALSE(comm->reduce_scatter_async({{dev, &two, &at}}).is_ok()) << "counts for 2 ranks in a group of 1";
  be.free_floats(dev);
}

// optim.master_weights = optimizer: an all-gather piece in a model's bf16 matrices goes as
// ncclBfloat16 from and into their bf16 buffer, a piece of the fp32 tail as fp32 (a one-rank
// broadcast leaves both as they were: this runs the path, two ranks would check the data), and a
// slice across the end of the matrices is refused.
TEST_F(NcclOneRank, AllGatherOfBf16MatricesAndTheirFp32Tail) {
  ASSERT_TRUE(start());
  CudaBackend& be = *be_;
  comm_->set_bf16_weights(&be.bf16_weights());
  const size_t n = 3000, part = 2000;
  auto host = randn(n, 9);
  float* w = be.alloc_weights(n, part);
  be.upload(w, host.data(), n);
  std::vector<float> before(n), after(n);
  be.download(before.data(), w, n);
  const std::vector<int> m = {1500}, m_at = {100}, t = {900}, t_at = {0};
  ASSERT_TRUE(comm_->allgather_async({{w, &m, &m_at}, {w + part, &t, &t_at}}).is_ok());
  ASSERT_TRUE(comm_->wait().is_ok());
  be.download(after.data(), w, n);
  EXPECT_EQ(after, before);
  const std::vector<int> across = {20}, across_at = {static_cast<int>(part) - 10};
  EXPECT_FALSE(comm_->allgather_async({{w, &across, &across_at}}).is_ok());
  be.free_floats(w);
}

// bf16 sums through a staging buffer of 700 values: the slices (1000, 2000 and 17 values) and the
// piece go in parts, and a one-rank sum leaves each value rounded to bf16, which must differ from
// the fp32 value somewhere.
TEST_F(NcclOneRank, Bf16SumsThroughASmallStagingBuffer) {
  ASSERT_TRUE(start());
  CudaBackend& be = *be_;
  NcclComm* comm = comm_.get();
  comm->enable_bf16(700);
  auto host = randn(kSliced, 9);
  const size_t n = host.size();
  float* dev = be.alloc_floats(n);
  auto rounded = [&](size_t i) { return bf16_to_f32(f32_to_bf16(2.0f * host[i])); };
  for (int round = 0; round < 2; ++round) {
    upload_doubled(be, dev, host);
    if (round == 0) {
      ASSERT_TRUE(comm->sum_async(three_slices(dev)).is_ok());
    } else {
      const std::vector<int> counts = {static_cast<int>(n)}, displs = {0};
      ASSERT_TRUE(comm->reduce_scatter_async({{dev, &counts, &displs}}).is_ok());
    }
    ASSERT_TRUE(comm->wait().is_ok());
    std::vector<float> got(n);
    be.download(got.data(), dev, n);
    size_t changed = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], rounded(i)) << "round " << round << " i " << i;
      changed += got[i] != 2.0f * host[i];
    }
    EXPECT_GT(changed, n / 2) << "round " << round << ": the values did not go through bf16";
  }
  be.free_floats(dev);
}

#else
TEST(NcclOneRank, NeedsNccl) { GTEST_SKIP() << "this build has no NCCL"; }
#endif

}  // namespace
}  // namespace leap::cuda
