// The policy replica on a policy rank: the model, its tokenizer, sampler and optimizer behind
// the PolicyEngine interface the distributed step drives.
//
// Training follows docs/design.md step 6 exactly: for each PPO epoch and mini-batch, the rank's
// samples are run in micro-batches; the loss normaliser is summed across ranks first (every
// rank takes part, with zeros when it holds no samples of that mini-batch), each micro-batch
// back-propagates its GRPO loss under that global normaliser into the flat gradient, the flat
// gradient is summed (not averaged) across the policy ranks, and AdamW steps. Replicas start
// identical and apply identical updates, so they stay identical. With rl.kl_beta > 0, each
// micro-batch first runs a forward under the frozen reference weights for the k3 term.
#pragma once

#include <algorithm>

#include "model/optimizer.h"
#include "model/reference_policy.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "model/transformer.h"
#include "mpi/engines.h"
#include "mpi/grad_reducer.h"
#include "mpi/optimizer_step.h"
#include "rl/grpo_loss.h"

namespace leap::mpi {

struct PolicyReplicaOptions {
  model::SamplerConfig sampler;
  rl::LossOptions loss;
  int micro_batch_seqs = 8;  // sequences per forward/backward on this rank
  int context_tokens = 0;    // the longest prompt + answer of the run: the KV cache's size
  std::vector<int32_t> eos_ids;  // any ends a completion; empty: the tokenizer's EOS
  // Sums the gradient over the policy group (NCCL on the CUDA backend); null: MPI_Allreduce.
  GradReducer* reducer = nullptr;
  // optim.zero_stage >= 1: the optimizer owns this shard; the step reduce-scatters and gathers
  // (stage 2: the model streams its gradient into ShardedGradients during each backward).
  const ZeroShard* zero = nullptr;
};

struct MicroBatch;  // policy_replica.cpp

class PolicyReplica final : public PolicyEngine {
 public:
  // `optimizer` null: a replica that samples only (leap eval); train() and write_checkpoint()
  // then stop the job.
  PolicyReplica(model::Transformer& model, const model::Tokenizer& tokenizer, model::AdamW* optimizer,
                PolicyReplicaOptions opts);

  std::vector<Completion> generate(const std::vector<RolloutItem>& items) override;
  void generate_stream(WorkSource& source) override;
  void bind_calling_thread() override { model_.backend().bind_calling_thread(); }
  // sampler.batch_seqs sequences decode together (0: the training micro-batch's count).
  int generation_batch() const override {
    return std::max(1, opts_.sampler.batch_seqs > 0 ? opts_.sampler.batch_seqs : opts_.micro_batch_seqs);
  }
  TrainReport train(const TrainWork& work, MPI_Comm policy) override;
  bool supports_train_early() const override { return optimizer_ != nullptr; }
  void train_early(const std::vector<TrainSample>& samples) override;
  Status write_checkpoint(MPI_Comm policy, const io::CheckpointRequest* req) override;
  // The frozen KL reference (not owned); train() needs one when loss.kl_beta > 0.
  void set_reference(model::ReferencePolicy* reference) { reference_ = reference; }
  // Over the model's weights wherever they are (a device's downloaded a chunk at a time).
  uint64_t params_checksum() const override;

 private:
  model::Transformer& model_;
  const model::Tokenizer& tokenizer_;
  model::AdamW* optimizer_;  // null: sampling only
  PolicyReplicaOptions opts_;
  model::ReferencePolicy* reference_ = nullptr;
  model::Sampler sampler_;
  // What train_early() put into the gradient since the last step: the local loss normaliser of
  // its sequences and their figures (the loss summed under 1).
  struct EarlyGradient {
    bool any = false;
    double norm = 0;
    TrainReport report;
  };
  EarlyGradient early_;

  // One micro-batch's forward (and the reference's) and backward under the loss normaliser
  // `norm` (0: deferred to the step, rl::grpo_loss), its figures added to *report; `last` arms
  // the reduction on its backward.
  void backprop(MicroBatch& mb, double norm, bool last, TrainReport* report);

  // What the rollout returns for a sampled completion of `prompt`.
  Completion completion_of(int64_t uid, std::vector<int32_t> prompt, model::Completion c) const;
};

}  // namespace leap::mpi
