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

void MpiShardCollectives::reduce_scatter(const std::vector<RankSlices>& pieces) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  const size_t r = static_cast<size_t>(rank);
  std::vector<float> mine;
  for (const auto& p : pieces) {
    const std::vector<int>& counts = *p.counts;
    // MPI's reduce-scatter is not in place: a receive buffer of one slice, for this call only (so
    // nothing stays allocated beside what leap plan counts). Its send buffer holds the slices back
    // to back in rank order, as the plan's are (displs are their prefix sums).
    mine.resize(static_cast<size_t>(std::max(1, counts[r])));
    MPI_CHECK(MPI_Reduce_scatter(p.piece, mine.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm_));
    std::copy_n(mine.data(), counts[r], p.piece + (*p.displs)[r]);
  }
}

void MpiShardCollectives::allgather(const std::vector<RankSlices>& pieces) {
  for (const auto& p : pieces)
    MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p.piece, p.counts->data(), p.displs->data(),
                             MPI_FLOAT, comm_));
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
