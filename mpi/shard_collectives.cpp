// MpiShardCollectives and the choice of collectives by backend (see shard_collectives.h).
#include "mpi/shard_collectives.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "mpi/grad_reduce.h"
#ifdef LEAP_HAVE_NCCL
#include "mpi/nccl_shard_collectives.h"
#endif

namespace leap::mpi {

void MpiShardCollectives::reduce_scatter(float* piece, const std::vector<int>& counts,
                                         const std::vector<int>& displs) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  const size_t r = static_cast<size_t>(rank);
  // MPI's reduce-scatter is not in place: a receive buffer of one slice, for this call only (so
  // nothing stays allocated beside what leap plan counts).
  std::vector<float> mine(static_cast<size_t>(std::max(1, counts[r])));
  // MPI_Reduce_scatter's send buffer holds the slices back to back in rank order: the plan's
  // slices are (displs are their prefix sums).
  MPI_CHECK(MPI_Reduce_scatter(piece, mine.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm_));
  std::copy_n(mine.data(), counts[r], piece + displs[r]);
}

void MpiShardCollectives::allgather(float* piece, const std::vector<int>& counts, const std::vector<int>& displs) {
  MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, piece, counts.data(), displs.data(), MPI_FLOAT, comm_));
}

double MpiShardCollectives::sum(double value) { return allreduce_sum(value, comm_); }

Expected<std::unique_ptr<ShardCollectives>> make_shard_collectives(backend::Backend& backend, MPI_Comm policy,
                                                                   double timeout_s) {
  if (std::strcmp(backend.name(), "cuda") != 0) {
    return std::unique_ptr<ShardCollectives>(new MpiShardCollectives(policy));
  }
#ifdef LEAP_HAVE_NCCL
  LEAP_ASSIGN_OR_RETURN(
      auto c, NcclShardCollectives::create(static_cast<cuda::CudaBackend&>(backend), policy, timeout_s));
  return std::unique_ptr<ShardCollectives>(std::move(c));
#else
  (void)timeout_s;
  return unsupported("optim.zero_stage >= 1 with backend.name = cuda needs NCCL; this build has none");
#endif
}

}  // namespace leap::mpi
