// The step's training sequences (design.md step 6), from the coordinator's turn records: rank 0
// decides what each trainer rank trains on.
//
// A multi-turn sample is trained once, as one sequence, when that is exact: its last turn's
// prompt and answer hold every earlier turn's prompt and answer as a prefix (the prompts were
// appended, never shortened or re-rendered), the loss is token-mean, and there is one mini-batch
// (with several, per-turn training deals a trajectory's turns to different updates). The loss
// then sits on each turn's sampled tokens with that turn's advantage and behaviour log-probs; a causal model gives those positions the same log-probs as the per-turn
// sequences, so the loss and gradient equal the per-turn ones, at the cost of one forward over
// the conversation instead of one per turn. Otherwise (rerender, a shortened prompt, seq-mean
// modes, or the option off) each turn is its own sequence, as before.
// Mini-batch m takes every mini_batches-th unit (a trajectory or a turn) in step order; inside it,
// units are balanced over the policy ranks by tokens.
#pragma once

#include <vector>

#include "mpi/messages.h"
#include "mpi/step_state.h"

namespace leap::mpi {

struct TrainSampleOptions {
  int mini_batches = 1;
  int ppo_epochs = 1;
  bool trajectory_once = true;  // only under token-mean and one mini-batch: else the caller passes false
};

struct TrainPlan {
  std::vector<TrainWork> work;  // one per policy rank
  int64_t sequences = 0;        // sequences the forward runs per epoch
  int64_t positions = 0;        // tokens the forward runs per epoch
  int64_t merged = 0;           // of them, trajectories trained once as one sequence
};

// A sequence to train on and the turns (uids) it covers.
struct TrainUnit {
  TrainSample sample;
  std::vector<int64_t> uids;
};

// The units in step order: a trajectory's turns (consecutive items of one sample) as one
// sequence when they may be merged (trajectory_once and each prompt extends the previous turn),
// otherwise one per turn; *merged (may be null) counts the merged trajectories.
std::vector<TrainUnit> train_units(const std::vector<StepState::TrainItem>& items, bool trajectory_once,
                                   int64_t* merged);

TrainPlan plan_training(const std::vector<StepState::TrainItem>& items, int policy_ranks,
                        const TrainSampleOptions& opts);

}  // namespace leap::mpi
