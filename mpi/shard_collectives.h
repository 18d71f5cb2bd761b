// ShardCollectives: ZeRO's collectives over the policy group, on the backend's memory: MPI on the
// CPU backend (host memory), NCCL on the CUDA backend (device memory). The sharded steps
// (zero_shard.h, zero_gradients.h) make the same calls either way, so the CPU runs, which the
// tests compare with the replicated step, check the logic the GPU runs.
//
// A piece is a range of a flat buffer cut into one slice per rank (ZeroPlan; common/rank_slices.h).
// Both calls take a list of pieces (a bucket: NCCL makes them one group and one wait), are in
// place and collective over the group; a failure (NCCL: an error or a timeout, the communicator
// aborted) is fatal, as a failed gradient sum is (optimizer_step.h).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "common/rank_slices.h"
#include "common/status.h"
#include "mpi/bf16_sum.h"
#include "mpi/grad_comm.h"

namespace leap::mpi {

class ShardCollectives {
 public:
  virtual ~ShardCollectives() = default;
  virtual const char* name() const = 0;
  // Afterwards this rank's slice of each piece holds the group's sum of it; the rest of the
  // pieces is undefined.
  void reduce_scatter(const std::vector<RankSlices>& pieces) {
    reduce_scatter_start(pieces);
    reduce_scatter_finish();
  }
  // The same in two halves, so that other work (the next layer's backward) runs in between: the
  // pieces' memory must not be touched until finish() returns. One call in flight at a time.
  virtual void reduce_scatter_start(const std::vector<RankSlices>& pieces) = 0;
  virtual void reduce_scatter_finish() = 0;
  // Afterwards every rank's slice holds what that rank had in it.
  virtual void allgather(const std::vector<RankSlices>& pieces) = 0;
  // The group's sum of a host value (a norm's sum of squares).
  virtual double sum(double value) = 0;
};

// MPI_Ireduce_scatter and MPI_Allgatherv over host memory. (Open MPI progresses a non-blocking
// collective inside MPI calls, so on the CPU the overlap is small: the halves prove the logic.)
// With bf16, the reduce-scatter sends each piece as bf16 bits and sums them with MpiBf16Sum.
class MpiShardCollectives final : public ShardCollectives {
 public:
  explicit MpiShardCollectives(MPI_Comm comm, bool bf16 = false);
  const char* name() const override { return bf16_ ? "mpi (bf16)" : "mpi"; }
  void reduce_scatter_start(const std::vector<RankSlices>& pieces) override;
  void reduce_scatter_finish() override;
  void allgather(const std::vector<RankSlices>& pieces) override;
  double sum(double value) override;

 private:
  MPI_Comm comm_;
  size_t rank_ = 0;  // this rank's slice of every piece
  // The call in flight: its pieces, requests and receive buffers (MPI's reduce-scatter is not in
  // place: one slice each, freed at finish, so nothing stays allocated beside what leap plan
  // counts).
  std::vector<RankSlices> pieces_;
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<float>> received_;
  bool bf16_;
  MpiBf16Sum bf16_sum_;
  std::vector<std::vector<uint16_t>> sent_bits_, received_bits_;  // bf16: the call in flight's
};

// The collectives for `backend` (its name()): MPI for cpu; NCCL for cuda, on a communicator of
// its own (collective over `policy`: every policy rank must call it). timeout_s bounds every NCCL
// wait.
Expected<std::unique_ptr<ShardCollectives>> make_shard_collectives(backend::Backend& backend, MPI_Comm policy,
                                                                   double timeout_s, const GradComm& comm = {});

}  // namespace leap::mpi
