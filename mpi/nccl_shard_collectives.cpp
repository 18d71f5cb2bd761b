// NcclShardCollectives (see nccl_shard_collectives.h).
#include "mpi/nccl_shard_collectives.h"

#include "common/check.h"
#include "mpi/grad_reduce.h"
#include "mpi/nccl_grad_reducer.h"

namespace leap::mpi {

Expected<std::unique_ptr<NcclShardCollectives>> NcclShardCollectives::create(cuda::CudaBackend& backend,
                                                                             MPI_Comm policy, double timeout_s,
                                                                             const GradComm& grad_comm) {
  LEAP_ASSIGN_OR_RETURN(auto comm, join_nccl(backend, policy, timeout_s, grad_comm));
  comm->set_bf16_weights(&backend.bf16_weights());
  return std::unique_ptr<NcclShardCollectives>(new NcclShardCollectives(std::move(comm), policy));
}

void NcclShardCollectives::reduce_scatter_start(const std::vector<RankSlices>& pieces) {
  const Status st = comm_->reduce_scatter_async(pieces);
  LEAP_CHECK(st.is_ok(), "ZeRO reduce-scatter (nccl) failed: " << st.message());
}

void NcclShardCollectives::reduce_scatter_finish() {
  const Status st = comm_->wait();
  LEAP_CHECK(st.is_ok(), "ZeRO reduce-scatter (nccl) failed: " << st.message());
}

void NcclShardCollectives::allgather(const std::vector<RankSlices>& pieces) {
  Status st = comm_->allgather_async(pieces);
  if (st.is_ok()) st = comm_->wait();
  LEAP_CHECK(st.is_ok(), "ZeRO all-gather (nccl) failed: " << st.message());
}

double NcclShardCollectives::sum(double value) { return allreduce_sum(value, policy_); }

}  // namespace leap::mpi
