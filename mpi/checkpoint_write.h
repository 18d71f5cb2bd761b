// Checkpoints and exports written by every policy rank in parallel (design.md, Checkpoints). Rank 0
// of the policy group begins the folder and finishes it; in between each rank writes its share of
// the bf16 export's shards and, for a checkpoint, the state file of the ranges it owns (the ZeRO
// plan's, whatever the stage: io/rank_state.h). So no rank gathers the model or the moments, and a
// 7B checkpoint costs each of 8 ranks about 1/8 of its bytes. Every rank learns whether every part
// was written (mpi::agree) before rank 0 renames the folder into place. The folder must be on a
// file system every policy rank sees (a cluster's shared one).
#pragma once

#include <mpi.h>

#include <string>

#include "common/status.h"
#include "io/checkpoint_dir.h"
#include "model/checkpoint.h"
#include "model/optimizer.h"
#include "model/transformer.h"
#include "mpi/zero_shard.h"

namespace leap::mpi {

// Collective over `policy`. `req` is read on rank 0 only (the others may pass null). `plan` is
// the run's ZeRO plan, or null for replicas (the same ranges are then cut from the layout).
Status write_checkpoint(MPI_Comm policy, const io::CheckpointRequest* req, const model::Transformer& model,
                        const model::AdamW& optimizer, const ZeroPlan* plan);

// save_model's export (a policy to ship: sft.save_to) with the shards spread over the ranks.
struct ExportRequest {
  std::string dir;
  model::DType stored = model::DType::kF32;
  uint64_t max_shard_bytes = model::kDefaultMaxShardBytes;
  std::string model_dir;  // the tokenizer and generation files are copied from here
};
// Collective over `policy`; `req` is read on rank 0 only.
Status export_model(MPI_Comm policy, const ExportRequest* req, const model::Transformer& model);

}  // namespace leap::mpi
