// ZeRO stage 1 on the policy group: each rank keeps AdamW's moments for a shard of the
// parameters only. The collectives are ShardCollectives (MPI on the CPU backend, NCCL on CUDA),
// the same calls either way. One optimizer step:
//   reduce_scatter_sum(grads)   the group's summed gradient, on this rank's shard;
//   AdamW on the shard          the global norm from every shard's sum of squares (clipping);
//   allgather(params)           every rank's updated shard to every rank.
// Gradients stay SUMMED under the global loss normaliser, as with the all-reduce (docs/design.md).
// The shard is cut per gradient bucket (layer_ranges: what one layer's backward completes, then
// the rest), each bucket split evenly over the ranks, so the reduce-scatter of a bucket starts as
// soon as its layer's backward is done (Zero1Overlap), as the overlapped all-reduce does.
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
#include "model/transformer.h"
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

// The plan's pieces by gradient bucket: each layer's (indices into plan.pieces, by layer) and the
// rest's (embedding, final norm, untied LM head).
struct PieceBuckets {
  std::vector<std::vector<size_t>> layers;
  std::vector<size_t> rest;
};
PieceBuckets piece_buckets(const ZeroPlan& plan, const model::ParameterLayout& layout);

// Stage 1's reduce-scatter overlapped with the backward that completes the gradient (a
// mini-batch's last micro-batch): arm() hooks the model's finished layers
// (Transformer::set_layer_grads_done), and each layer's bucket starts its reduce-scatter while the
// backward goes on with the layers below; one call is in flight, so starting layer l first
// finishes layer l+1's. reduce_scatter() then finishes it and makes every call the backward did
// not, in the same order (layers from the last down, then the rest): every rank makes the same
// calls in the same order, whether its backward ran or not (a rank without a micro-batch makes
// them all there). The result is reduce_scatter_sum's.
class Zero1Overlap {
 public:
  // `plan` and `comm` must outlive the object.
  Zero1Overlap(const ZeroPlan& plan, const model::ParameterLayout& layout, ShardCollectives& comm);
  // The next backward of `model` completes its gradient.
  void arm(model::Transformer& model);
  // Afterwards this rank's slices of model.grads() hold the group's sum (the rest is undefined),
  // and the model is disarmed.
  void reduce_scatter(model::Transformer& model);
  // Layers whose reduce-scatter the backward started, as of the last reduce_scatter() (all of
  // them when this rank's backward was armed; 0 on a rank without a micro-batch).
  int overlapped_layers() const { return overlapped_; }

 private:
  void start_layer(float* grads, int l);

  const ZeroPlan* plan_;
  ShardCollectives* comm_;
  PieceBuckets buckets_;
  int started_ = 0;      // layers started since arm(), from the last one down
  bool in_flight_ = false;
  int overlapped_ = 0;
};

// Sums `grads` (the flat buffer) over the group; afterwards this rank's slices hold the sum (the
// other floats are undefined).
void reduce_scatter_sum(float* grads, const ZeroPlan& plan, ShardCollectives& comm);
// Every rank's slices of the model's weights to every rank, and the backend told (its compute
// copies of the weights are stale).
void allgather_weights(model::Transformer& model, const ZeroPlan& plan, ShardCollectives& comm);

// The sharded optimizer step above; `optimizer` must own plan.owned() (AdamW's shard). With
// `overlap`, the reduce-scatter is its reduce_scatter() (the backward armed it, or not).
// grad_multiplier as in AdamW::step.
model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer,
                            const ZeroPlan& plan, ShardCollectives& comm,
                            Zero1Overlap* overlap = nullptr, double grad_multiplier = 1.0);

}  // namespace leap::mpi
