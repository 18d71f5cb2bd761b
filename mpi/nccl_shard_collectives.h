// NcclShardCollectives: ZeRO's collectives (shard_collectives.h) on the CUDA backend, over a
// communicator of their own. Each call (a bucket's pieces) is one NCCL group on the comm stream
// after the compute stream's work so far, then a polled wait (NcclComm::wait), so the
// compute stream's later work sees the result and the caller may reuse the piece's memory. The
// reduce-scatter's wait is its finish(): stages 1 (Zero1Overlap) and 2 start a layer's and
// finish it after enqueuing the next layer's backward, which runs on the compute stream
// meanwhile. The all-gather waits at once. The host-side norm goes over MPI. With
// optim.grad_comm_dtype = bf16 the reduce-scatter sums in bf16 (NcclComm::enable_bf16).
//
// Written against the NCCL API and compiled here; it has not run on a GPU yet.
#pragma once

#include <mpi.h>

#include <memory>

#include "cuda/cuda_backend.h"
#include "cuda/nccl_comm.h"
#include "mpi/shard_collectives.h"

namespace leap::mpi {

class NcclShardCollectives final : public ShardCollectives {
 public:
  // Collective over `policy`.
  static Expected<std::unique_ptr<NcclShardCollectives>> create(cuda::CudaBackend& backend, MPI_Comm policy,
                                                                double timeout_s, const GradComm& comm = {});
  const char* name() const override { return comm_->bf16() ? "nccl (bf16)" : "nccl"; }
  void reduce_scatter_start(const std::vector<RankSlices>& pieces) override;
  void reduce_scatter_finish() override;
  void allgather(const std::vector<RankSlices>& pieces) override;
  double sum(double value) override;

 private:
  NcclShardCollectives(std::unique_ptr<cuda::NcclComm> comm, MPI_Comm policy)
      : comm_(std::move(comm)), policy_(policy) {}
  std::unique_ptr<cuda::NcclComm> comm_;
  MPI_Comm policy_;
};

}  // namespace leap::mpi
