// The SFT warm start (docs/design.md, SFT mode): cross-entropy on (prompt, answer) pairs of the
// suite's `train` tasks with the loss masked to the answer.
//  - Material (rank 0): each task's reference; meaning-keeping rewrites of it that the sandbox
//    verifies (so a small policy does not memorise one string per task); and repair turns: a
//    broken variant, the feedback the sandbox really gave it, and the reference as the fix (so
//    the policy learns to use feedback). Verification runs through the JobDispatcher: on the
//    sandbox ranks, or in-process.
//  - Training (every policy rank, collective over the policy communicator): each step draws
//    batch_seqs examples (epoch-wise permutations, the same on every rank), spreads them over
//    the ranks by tokens, back-propagates the token-mean cross-entropy under the global token
//    count, sums gradients and steps AdamW.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/log.h"
#include "model/optimizer.h"
#include "model/tokenizer.h"
#include "model/transformer.h"
#include "mpi/grad_reducer.h"
#include "mpi/optimizer_step.h"
#include "mpi/job_dispatch.h"
#include "mpi/messages.h"
#include "rl/prompt_builder.h"
#include "tasks/suite.h"
#include "tasks/task_sampler.h"

namespace leap::mpi {

struct SftOptions {
  int batch_seqs = 16;
  int augment = 2;         // verified rewrites per task
  bool repairs = true;     // repair turns from broken variants
  bool rename_kernels = true;  // rewrites may rename kernels (off where prompts name them)
  double prompt_loss_weight = 0;  // weight of the prompt's tokens in the loss (answer tokens: 1)
  int log_every = 10;
  std::string save_to;     // also write the final policy here (e.g. models/demo)
  std::string save_dtype = "f32";  // how save_to stores the weights: f32 or bf16
  void declare(OptionSet& opts);
};

struct SftMaterialStats {
  int tasks = 0, references = 0, rewrites = 0, rewrites_dropped = 0, repairs = 0, repairs_dropped = 0;
  int too_long = 0;  // examples longer than the model's context, left out
};

// The loss weight of every position of a micro-batch (B x T, row b holding seqs[b]): 1 for the
// answer's tokens, prompt_weight for the prompt's (the first token is never predicted), 0 for
// padding.
std::vector<float> sft_loss_weights(const std::vector<const TrainSample*>& seqs, int T, double prompt_weight);
// The sum of one example's weights there: the loss is normalised by this summed over the batch.
double sft_loss_tokens(const TrainSample& e, double prompt_weight);

// Rank 0: the training examples, as token sequences with the prompt length marking the loss.
Expected<std::vector<TrainSample>> build_sft_material(const tasks::Suite& suite, const rl::PromptBuilder& prompts,
                                                      JobDispatcher& dispatcher,
                                                      const SftOptions& opts, uint64_t seed, size_t max_tokens,
                                                      SftMaterialStats* stats);

struct SftReport {
  double first_loss = 0, last_loss = 0;  // of this run's first and last step
  int steps = 0;                         // steps done, counting those before a resume
};

// Where an SFT run continues: the first step to run and the data order (the example sampler's
// state) after the step before it, as a checkpoint recorded them. {} starts at step 0.
struct SftPosition {
  int next_step = 0;
  tasks::TaskSampler::State data_order;
};

// Called on every policy rank after each step (0-based) with the data order after it; rank 0
// writes the checkpoints from here. It returns whether to go on (false: a stop signal, the
// step's checkpoint written; every rank must return the same); an error stops the training.
using SftStepDone =
    std::function<Expected<bool>(int step, const tasks::TaskSampler::State& data_order, bool last)>;

// A fingerprint of the material (every example's tokens and prompt length), recorded in SFT
// checkpoints: a resumed run whose material differs does not continue the same data order.
std::string sft_material_hash(const std::vector<TrainSample>& examples);

// Every policy rank, collectively over `policy`, with the same `examples` everywhere. `reducer`
// sums the gradient (NCCL on the CUDA backend); null: MPI_Allreduce. `zero` (optim.zero_stage
// 1 or 2): the optimizer owns this rank's shard, and each step is zero1_step, or zero2_step when
// the model streams its gradient. A run resumed from
// `from` makes the same updates as an uninterrupted one from there on.
Expected<SftReport> train_sft(model::Transformer& model, model::AdamW& optimizer,
                              const std::vector<TrainSample>& examples, int steps, int micro_batch_seqs,
                              const SftOptions& opts, uint64_t seed, MPI_Comm policy, const Logger& log,
                              GradReducer* reducer, const ZeroShard* zero, const SftPosition& from,
                              const SftStepDone& step_done);

}  // namespace leap::mpi
