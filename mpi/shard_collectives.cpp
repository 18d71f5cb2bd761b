// MpiShardCollectives and the choice of collectives by backend (see shard_collectives.h).
#include "mpi/shard_collectives.h"

#include <algorithm>
#include <cstring>

#include "common/bf16.h"
#include "common/check.h"
#include "mpi/grad_reduce.h"
#ifdef LEAP_HAVE_NCCL
#include "mpi/nccl_shard_collectives.h"
#endif

namespace leap::mpi {

MpiShardCollectives::MpiShardCollectives(MPI_Comm comm, bool bf16) : comm_(comm), bf16_(bf16) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  rank_ = static_cast<size_t>(rank);
}

void MpiShardCollectives::reduce_scatter_start(const std::vector<RankSlices>& pieces) {
  LEAP_CHECK(requests_.empty(), "a reduce-scatter is already in flight");
  pieces_ = pieces;
  requests_.resize(pieces.size());
  if (bf16_) {
    sent_bits_.resize(pieces.size());
    received_bits_.resize(pieces.size());
  } else {
    received_.resize(pieces.size());
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    // The send buffer holds the slices back to back in rank order, as the plan's are (displs are
    // their prefix sums).
    const std::vector<int>& counts = *pieces[i].counts;
    const size_t mine = static_cast<size_t>(std::max(1, counts[rank_]));
    if (!bf16_) {
      received_[i].resize(mine);
      MPI_CHECK(MPI_Ireduce_scatter(pieces[i].piece, received_[i].data(), counts.data(), MPI_FLOAT, MPI_SUM,
                                    comm_, &requests_[i]));
      continue;
    }
    const size_t total = static_cast<size_t>(pieces[i].displs->back() + counts.back());
    sent_bits_[i].resize(total);
    f32_to_bf16(pieces[i].piece, total, sent_bits_[i].data());
    received_bits_[i].resize(mine);
    MPI_CHECK(MPI_Ireduce_scatter(sent_bits_[i].data(), received_bits_[i].data(), counts.data(), MPI_UINT16_T,
                                  bf16_sum_.op(), comm_, &requests_[i]));
  }
}

void MpiShardCollectives::reduce_scatter_finish() {
  MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const size_t n = static_cast<size_t>((*pieces_[i].counts)[rank_]);
    float* own = pieces_[i].piece + (*pieces_[i].displs)[rank_];
    if (bf16_)
      bf16_to_f32(received_bits_[i].data(), n, own);
    else
      std::copy_n(received_[i].data(), n, own);
  }
  pieces_.clear();
  requests_.clear();
  received_.clear();
  sent_bits_.clear();
  received_bits_.clear();
}

void MpiShardCollectives::allgather(const std::vector<RankSlices>& pieces) {
  for (const auto& p : pieces)
    MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p.piece, p.counts->data(), p.displs->data(),
                             MPI_FLOAT, comm_));
}

double MpiShardCollectives::sum(double value) { return allreduce_sum(value, comm_); }

Expected<std::unique_ptr<ShardCollectives>> make_shard_collectives(backend::Backend& backend, MPI_Comm policy,
                                                                   double timeout_s, const GradComm& comm) {
  if (std::strcmp(backend.name(), "cuda") != 0) {
    return std::unique_ptr<ShardCollectives>(new MpiShardCollectives(policy, comm.bf16));
  }
#ifdef LEAP_HAVE_NCCL
  LEAP_ASSIGN_OR_RETURN(
      auto c, NcclShardCollectives::create(static_cast<cuda::CudaBackend&>(backend), policy, timeout_s, comm));
  return std::unique_ptr<ShardCollectives>(std::move(c));
#else
  (void)timeout_s;
  return unsupported("optim.zero_stage >= 1 with backend.name = cuda needs NCCL; this build has none");
#endif
}

}  // namespace leap::mpi
