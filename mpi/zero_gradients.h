// ZeRO stage 2 on the policy group: gradients sharded as well as AdamW's moments, through the
// same ShardCollectives as stage 1 (MPI on the CPU backend, NCCL on CUDA). The model keeps no
// whole gradient (Transformer::set_gradient_stream): each layer's backward writes a layer-sized
// buffer, whose reduce-scatter starts as soon as that layer is done and finishes when the next
// layer is done, so it overlaps that layer's backward; this rank then adds its slice of the
// group's sum to its shard (fp32, also when the collective carries bf16: optim.grad_comm_dtype). Two layer buffers take turns (the model's and this object's). The
// embedding, LM head and final norm follow when the backward returns. A rank therefore holds
// 1/N of the gradient, plus two layers' and the rest's buffers, instead of all of it. The shard is ZeroPlan's (stage 1's),
// so checkpoints and resumes are the same as stage 1's.
//
// Every micro-batch's backward makes collectives, so every rank runs as many backward passes as
// the rank with the most (backward_passes); one with fewer hands over zeros
// (Transformer::backward_nothing). Gradients stay SUMMED under the global loss normaliser.
//
// test_zero_shard_mpi checks the step against the replicated one on 1, 2 and 4 ranks, with
// ranks holding different numbers of micro-batches, and the gradient's memory against the plan.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "model/gradient_stream.h"
#include "model/optimizer.h"
#include "mpi/zero_shard.h"

namespace leap::mpi {

class ShardedGradients final : public model::GradientStream {
 public:
  // `plan` (this rank's), `backend` and `comm` must outlive the object; the shard lives in
  // backend memory.
  ShardedGradients(const ZeroPlan& plan, const model::ParameterLayout& layout, backend::Backend& backend,
                   ShardCollectives& comm);
  ~ShardedGradients() override;
  ShardedGradients(const ShardedGradients&) = delete;
  ShardedGradients& operator=(const ShardedGradients&) = delete;

  void attach() override;
  void clear() override;
  float* layer_done(int l, float* layer_grads) override;
  void rest_done(float* rest_grads) override;

  // This rank's shard of the group's summed gradient (backend memory), compact in plan.owned()
  // order: the order of AdamW's moments for that shard.
  const float* sum() const { return sum_; }
  size_t floats() const { return floats_; }

 private:
  // One piece of the plan inside a compact buffer, and where this rank's slice of it goes.
  struct Piece {
    size_t plan_index = 0;
    size_t in_buffer = 0;  // offset in the compact layer or rest buffer
    size_t in_sum = 0;     // offset of this rank's slice in sum_
  };
  // A bucket's reduce-scatter: start() starts it in place; finish() waits, adds this rank's
  // slices to the shard and zeroes the buffer.
  void start(const std::vector<Piece>& pieces, float* buffer);
  void finish(const std::vector<Piece>& pieces, float* buffer, size_t buffer_floats);

  const ZeroPlan* plan_;
  backend::Backend* be_;
  ShardCollectives* comm_;
  std::vector<std::vector<Piece>> layer_pieces_;  // per layer
  std::vector<Piece> rest_pieces_;
  size_t layer_floats_ = 0, rest_floats_ = 0;
  float* sum_ = nullptr;  // floats_ of backend memory
  size_t floats_ = 0;
  float* spare_ = nullptr;  // this object's layer buffer (layer_floats_, backend memory)
  float* other_ = nullptr;  // the layer buffer the model does not hold: idle, or in flight
  const std::vector<Piece>* in_flight_ = nullptr;  // the pieces of other_'s reduce-scatter
};

// The backward passes every rank must run this optimizer step: the most micro-batches any rank
// of `policy` holds (collective) when the model streams its gradient, else `mine`.
int backward_passes(const model::Transformer& model, int mine, MPI_Comm policy);

// The stage-2 optimizer step: AdamW on the shard's summed gradient (the norm over every shard),
// then every rank's updated slices to every rank. The model's stream must be a ShardedGradients.
model::StepStats zero2_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            ShardCollectives& comm);

}  // namespace leap::mpi
