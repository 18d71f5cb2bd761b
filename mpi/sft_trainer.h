// The SFT warm start (DESIGN.md, SFT mode): cross-entropy on (prompt, answer) pairs of the
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

#include <vector>

#include "common/config.h"
#include "common/log.h"
#include "model/optimizer.h"
#include "model/tokenizer.h"
#include "model/transformer.h"
#include "mpi/grad_reducer.h"
#include "mpi/job_dispatch.h"
#include "mpi/messages.h"
#include "rl/prompt_builder.h"
#include "tasks/suite.h"

namespace leap::mpi {

struct SftOptions {
  int batch_seqs = 16;
  int augment = 2;         // verified rewrites per task
  bool repairs = true;     // repair turns from broken variants
  int log_every = 10;
  std::string save_to;     // also write the final policy here (e.g. models/demo)
  void declare(OptionSet& opts);
};

struct SftMaterialStats {
  int tasks = 0, references = 0, rewrites = 0, rewrites_dropped = 0, repairs = 0, repairs_dropped = 0;
  int too_long = 0;  // examples longer than the model's context, left out
};

// Rank 0: the training examples, as token sequences with the prompt length marking the loss.
Expected<std::vector<TrainSample>> build_sft_material(const tasks::Suite& suite, const rl::PromptBuilder& prompts,
                                                      const model::Tokenizer& tokenizer, JobDispatcher& dispatcher,
                                                      const SftOptions& opts, uint64_t seed, size_t max_tokens,
                                                      SftMaterialStats* stats);

struct SftReport {
  double first_loss = 0, last_loss = 0;
  int steps = 0;
};

// Every policy rank, collectively over `policy`, with the same `examples` everywhere. `reducer`
// sums the gradient (NCCL on the CUDA backend); null: MPI_Allreduce.
SftReport train_sft(model::Transformer& model, model::AdamW& optimizer, const std::vector<TrainSample>& examples,
                    int steps, int micro_batch_seqs, const SftOptions& opts, uint64_t seed, MPI_Comm policy,
                    const Logger& log, GradReducer* reducer = nullptr);

}  // namespace leap::mpi
