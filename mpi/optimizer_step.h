// The end of a mini-batch on a policy rank, shared by RL (policy_replica) and SFT (sft_trainer):
// the gradient summed over the policy group, then the AdamW update.
//  - replicated (optim.zero_stage 0): the reducer's sum (NCCL on CUDA, MPI on the CPU; without a
//    reducer MPI_Allreduce), then every rank updates every parameter;
//  - sharded (a ZeroPlan, stage 1): zero1_step (reduce-scatter, the shard's update, all-gather),
//    the reduce-scatter overlapped with the last backward when the shard has a Zero1Overlap;
//  - gradients sharded too (a ZeroPlan and a model whose gradient streams into ShardedGradients,
//    stage 2): zero2_step (the reduce-scatters ran during the backward passes; the shard's update,
//    all-gather).
// Collective over `policy`; a failed sum is fatal (it names the reducer).
#pragma once

#include <mpi.h>

#include "model/optimizer.h"
#include "mpi/grad_reducer.h"
#include "mpi/zero_gradients.h"
#include "mpi/zero_shard.h"

namespace leap::mpi {

// What a sharded (ZeRO) policy rank holds: its plan and the collectives over the policy group.
struct ZeroShard {
  const ZeroPlan* plan = nullptr;
  ShardCollectives* comm = nullptr;
  Zero1Overlap* overlap = nullptr;  // stage 1: the reduce-scatter overlapped with the backward
};

// Before the backward that completes the gradient (a mini-batch's last micro-batch on this rank):
// lets the reducer, or stage 1's overlap, start on each layer as the backward finishes it.
void arm_last_backward(model::Transformer& model, GradReducer* reducer, const ZeroShard* zero);

// `zero` null: replicated; otherwise `reducer` must be null (ZeRO sums through its collectives).
// grad_multiplier: the summed gradient is that many times the buffers (AdamW::step); stages 0
// and 1 only, since stage 2 sums during the backward passes.
model::StepStats sum_and_step(model::Transformer& model, model::AdamW& optimizer, GradReducer* reducer,
                              const ZeroShard* zero, MPI_Comm policy, double grad_multiplier = 1.0);

}  // namespace leap::mpi
