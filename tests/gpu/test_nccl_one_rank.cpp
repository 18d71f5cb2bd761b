// A one-rank NCCL communicator (NCCL cannot put two ranks on one GPU, so this is what one GPU
// can test; the multi-rank summing logic is the MPI path's, tested under mpirun): creation from
// a fresh unique id, a grouped in-place sum of several slices that must wait for the compute
// stream's writes and leave a one-rank sum unchanged, and the polled wait; ZeRO's reduce-scatter
// and all-gather of a piece cut into per-rank slices, likewise. Skips without a GPU or without
// NCCL in this build.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "cuda/cuda_backend.h"
#include "tests/gpu/gpu_test_env.h"
#ifdef LEAP_HAVE_NCCL
#include "cuda/nccl_comm.h"
#endif

namespace leap::cuda {
namespace {

class NcclOneRank : public GpuTest {
#ifdef LEAP_HAVE_NCCL
 protected:
  // A one-rank communicator from a fresh unique id (null after a failed assertion).
  std::unique_ptr<NcclComm> one_rank() {
    auto comm = NcclComm::create(*ctx_, NcclComm::make_unique_id(), 0, 1, 30.0);
    EXPECT_TRUE(comm.has_value()) << comm.status().message();
    return comm.has_value() ? std::move(*comm) : nullptr;
  }
#endif
};

TEST_F(NcclOneRank, SumOfSlicesAfterComputeWork) {
#ifndef LEAP_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#else
  CudaBackend be(*ctx_);
  auto comm = one_rank();
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->size(), 1);
  const size_t n = 3 * 1000 + 17;
  auto host = randn(n, 5);
  float* dev = be.alloc_floats(n);
  for (int round = 0; round < 3; ++round) {
    // Written on the compute stream just before the sum: the comm stream must wait for it.
    for (auto& x : host) x += 1.0f;
    be.upload(dev, host.data(), n);
    be.add_forward(dev, dev, dev, n);  // doubles every entry on the compute stream
    std::vector<FloatSlice> slices = {{dev, 1000}, {dev + 1000, 2000}, {dev + 3000, 17}};
    ASSERT_TRUE(comm->sum_async(slices).is_ok());
    ASSERT_TRUE(comm->wait().is_ok());
    std::vector<float> got(n);
    be.download(got.data(), dev, n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], 2.0f * host[i]) << "round " << round << " i " << i;
  }
  be.free_floats(dev);
#endif
}

TEST_F(NcclOneRank, ZeroReduceScatterAndAllGatherAfterComputeWork) {
#ifndef LEAP_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#else
  CudaBackend be(*ctx_);
  auto comm = one_rank();
  ASSERT_NE(comm, nullptr);
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
#endif
}

}  // namespace
}  // namespace leap::cuda
