// What `leap train` reads (every section it declares) and what a policy rank holds. Shared by
// the command (setup, SFT) and the RL loop on rank 0.
#pragma once

#include <algorithm>
#include <memory>

#include "apps/app_options.h"
#include "apps/policy_backend.h"
#include "apps/train_options.h"
#include "backend/cpu_backend.h"
#include "model/tokenizer.h"
#include "model/model_options.h"
#include "model/optimizer.h"
#include "model/reference_policy.h"
#include "model/sampler.h"
#include "model/transformer.h"
#include "mpi/coordinator.h"
#include "mpi/grad_reducer.h"
#include "mpi/policy_replica.h"
#include "mpi/sft_trainer.h"
#include "mpi/shard_collectives.h"
#include "mpi/zero_gradients.h"
#include "mpi/zero_shard.h"
#include "rl/prompt_format.h"
#include "rl/rl_config.h"
#include "sandbox/sandbox_config.h"
#include "tasks/suite.h"

namespace leap::app {

struct TrainConfig {
  AppOptions app;
  TrainOptions train;
  tasks::TasksConfig tasks;
  model::ModelOptions model;
  model::SamplerConfig sampler;
  model::OptimConfig optim;
  rl::RlSections rl;
  sandbox::SandboxConfig sandbox;
  mpi::SftOptions sft;
  void declare(OptionSet& opts) {
    app.declare(opts);
    train.declare(opts);
    tasks.declare(opts);
    model.declare(opts);
    sampler.declare(opts);
    optim.declare(opts);
    rl.declare(opts);
    sandbox.declare(opts);
    sft.declare(opts);
  }
  // The longest prompt a turn builds (the prompt builder's budget in a context of `context`
  // positions) and the longest sequence, that prompt and then the answer: what `leap plan`
  // counts and the policy's KV cache is sized for.
  int64_t longest_prompt(int64_t context) const {
    return static_cast<int64_t>(
        rl.prompt.options(mpi::prompt_budget(context, sampler.max_new_tokens)).max_prompt_tokens);
  }
  int64_t longest_sequence(int64_t context) const {
    return std::min(context, longest_prompt(context) + sampler.max_new_tokens);
  }
};

// What a policy rank holds: the model and everything that trains or samples it.
// Members are destroyed in reverse order: the CUDA context outlives the backend, the reducer
// (its NCCL communicator) outlives nothing that uses it.
struct PolicyState {
#ifdef LEAP_HAVE_CUDA
  std::unique_ptr<cuda::CudaContext> cuda;  // backend.name = cuda only
#endif
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<model::Tokenizer> tokenizer;  // chosen by the model folder (model_tokenizer.h)
  std::vector<int32_t> eos_ids;                  // what ends generation (generation_config.h)
  std::unique_ptr<rl::PromptFormat> prompt_format;  // rank 0: how conversations become ids
  std::unique_ptr<mpi::ZeroPlan> zero;  // optim.zero_stage >= 1: this rank's shard of the moments
  std::unique_ptr<mpi::ShardCollectives> shard_comm;  // ZeRO's collectives (MPI, or NCCL on cuda)
  mpi::ZeroShard zero_shard;                          // {zero, shard_comm}: what the steps take
  std::unique_ptr<mpi::ShardedGradients> sharded_grads;  // optim.zero_stage = 2: the model's gradient stream
  std::unique_ptr<mpi::Zero1Overlap> zero1_overlap;      // optim.zero_stage = 1: its reduce-scatter in the backward
  std::unique_ptr<model::AdamW> optimizer;
  std::unique_ptr<mpi::GradReducer> reducer;  // null with ZeRO, which sums through shard_comm
  std::unique_ptr<model::ReferencePolicy> reference;  // train with rl.kl_beta > 0 only
  std::unique_ptr<mpi::PolicyReplica> replica;
};

}  // namespace leap::app
