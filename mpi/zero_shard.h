// ZeRO stage 1 on the policy group: each rank keeps AdamW's moments for a shard of the
// parameters only. The collectives are ShardCollectives (MPI on the CPU backend, NCCL on CUDA),
// the same calls either way. One optimizer step:
//   reduce_scatter_sum(grads)   the group's summed gradient, on this rank's shard;
//   AdamW on the shard          the global norm from every shard's sum of squares (clipping);
//   allgather(params)           every rank's updated shard to every rank.
// Gradients stay SUMMED under the global loss normaliser, as with the all-reduce (DESIGN.md).
// The shard is cut per gradient bucket (layer_ranges: what one layer's backward completes, then
// the rest), each bucket split evenly over the ranks, so the collectives can later start on a
// bucket as soon as its layer's backward is done, as the overlapped all-reduce does.
//
// `leap train` uses it with optim.zero_stage = 1; stage 2 (zero_gradients.h) keeps
// this plan and sums the gradient into the shard during the backward instead. A checkpoint has each
// rank write the state of its own slices (mpi/checkpoint_write.h); resuming onto any number of
// ranks reads each rank's new shard from those files. test_zero_shard_mpi checks the step against
// the replicated one on 1, 2 and 4 ranks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "model/optimizer.h"
#include "mpi/grad_buckets.h"
#include "mpi/shard_collectives.h"

namespace leap::mpi {

struct ZeroPlan {
  int rank = 0, world = 1;
  // The flat buffer cut into pieces: the gradient buckets, each cut to at most max_piece floats
  // (MPI counts are ints). Rank r's slice of piece p is [pieces[p].first + displs[p][r],
  // + counts[p][r]).
  std::vector<FloatRange> pieces;
  std::vector<std::vector<int>> counts, displs;
  // This rank's slices as (offset, count) ranges of the flat buffer, in order.
  std::vector<FloatRange> owned() const;
};

ZeroPlan make_zero_plan(const model::ParameterLayout& layout, int rank, int world,
                        size_t max_piece = size_t{1} << 27);

// Sums `grads` (the flat buffer) over the group; afterwards this rank's slices hold the sum (the
// other floats are undefined).
void reduce_scatter_sum(float* grads, const ZeroPlan& plan, ShardCollectives& comm);
// Every rank's slices of the model's weights to every rank, and the backend told (its compute
// copies of the weights are stale).
void allgather_weights(model::Transformer& model, const ZeroPlan& plan, ShardCollectives& comm);

// The sharded optimizer step above; `optimizer` must own plan.owned() (AdamW's shard).
model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer,
                            const ZeroPlan& plan, ShardCollectives& comm);

}  // namespace leap::mpi
