// A checkpoint's exact training state, one file per policy rank (docs/design.md, Checkpoints):
// RUN/checkpoints/step_N/optimizer-rankRRRRR-of-NNNNN.safetensors holds, for each range
// (offset, count) of the flat parameter buffer that rank R of N owns, three F32 tensors:
//   master@OFFSET       the fp32 weights (the model beside them is a bf16 export): the model's
//                       own, or the optimizer's masters (optim.master_weights = optimizer);
//   exp_avg@OFFSET      AdamW's first moment;
//   exp_avg_sq@OFFSET   AdamW's second moment.
// The ranges are the ZeRO plan's (mpi/zero_shard.h) whatever the stage, so the N ranks write
// disjoint files in parallel and, under ZeRO, each writes what it owns. Together the files cover
// the buffer exactly once; a loader takes the ranges it needs from each, so a run resumes onto
// any number of ranks with the state bit for bit. (Training on from there with another number
// of ranks sums the gradients in another order, so it is not bit-identical to a run that kept
// the old number.)
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/optimizer.h"
#include "model/transformer.h"

namespace leap::io {

using FlatRanges = std::vector<std::pair<size_t, size_t>>;  // (offset, count), sorted, disjoint

std::string rank_state_name(int rank, int world);  // "optimizer-rank00001-of-00004.safetensors"

// Writes DIR/rank_state_name(rank, world) atomically: `ranges` of the model's weights and of the
// optimizer's moments. A sharded optimizer must own exactly `ranges`; a replicated one is read
// at them. Range by range from the backend: no host copy of more than one range.
Status write_rank_state(const std::string& dir, int rank, int world, const model::Transformer& model,
                        const model::AdamW& optimizer, const FlatRanges& ranges);

// Whether DIR holds rank-state files (a checkpoint from before them has optimizer.safetensors).
bool has_rank_states(const std::string& dir);

// Reads every rank-state file of DIR: the fp32 weights into `model` (all of them; rounded where
// its matrices are bf16) and the moments this optimizer holds (its shard, or all), with the fp32
// masters where the optimizer keeps them (AdamW::masters(), exactly). The files must be one
// complete set (0..N-1 of N) whose ranges cover the buffer exactly once, or it is invalid_input
// naming the file and the fix. With `weights_of_shard_only` (a sharded optimizer: ZeRO) the weights
// too are read at the shard's ranges only, and only the stored ranges that overlap the shard are
// read at all: resumed onto as many ranks, each rank reads its own file, 1/N of the checkpoint,
// instead of every rank reading every file; the caller all-gathers the rest
// (mpi::allgather_weights).
Status load_rank_states(const std::string& dir, model::Transformer& model, model::AdamW& optimizer,
                        bool weights_of_shard_only = false);

}  // namespace leap::io
