// Run checkpoints (docs/design.md, Checkpoints): RUN/checkpoints/step_NNNNNN/ holds
//   config.json + model.safetensors       the policy as a Hugging Face bf16 export (opens in
//     (or model-0000k-of-0000n + index)   transformers), shards of at most 5 GB;
//   optimizer-rankRRRRR-of-NNNNN.safetensors  per policy rank: the fp32 master weights and AdamW's
//                                         moments of the ranges it owns (rank_state.h), so that
//                                         a resume is exact;
//   state.json                            step, optimizer step count, RNG and sampler state, the
//                                         DCP state, and anything else the caller puts there.
// The policy ranks write their parts in parallel (mpi/checkpoint_write.h): rank 0 begins the
// temporary folder, every rank writes its export shards and its rank state, and rank 0 finishes
// (config.json, the index, state.json) and renames the folder into place, so a crash never
// leaves a half-written checkpoint; only the newest `keep` are kept. Checkpoints written before
// the rank-state files (model.safetensors in fp32 and optimizer.safetensors) still load.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "io/rank_state.h"
#include "model/checkpoint.h"
#include "model/optimizer.h"
#include "model/transformer.h"

namespace leap::io {

std::string checkpoint_dir_name(int64_t step);  // "step_000042"

// The parts of one checkpoint's write, in order.
struct CheckpointRequest {
  std::string run_dir;
  int64_t step = 0;
  nlohmann::json state;   // state.json, with step and optimizer_steps added
  int keep = 3;           // checkpoints kept
  std::string model_dir;  // the policy's folder: its tokenizer and generation files are copied
  uint64_t max_shard_bytes = model::kDefaultMaxShardBytes;
};
// Rank 0: creates RUN/checkpoints/.tmp_step_N afresh; returns its path.
Expected<std::string> begin_checkpoint(const std::string& run_dir, int64_t step);
// Every policy rank: the bf16 export's shards k with k % world == rank, and this rank's state
// file for `ranges` (rank_state.h).
Status write_checkpoint_part(const std::string& tmp, const model::Transformer& model, const model::AdamW& optimizer,
                             int rank, int world, const FlatRanges& ranges, uint64_t max_shard_bytes);
// Rank 0, once every part is written: config.json, the index, the side files and state.json;
// renames the folder into place and prunes older checkpoints beyond `keep`.
Status finish_checkpoint(const std::string& tmp, const CheckpointRequest& req, const model::Transformer& model,
                         const model::AdamW& optimizer);
// The three on one process that holds the whole replicated state (one rank-state file).
Status save_checkpoint(const CheckpointRequest& req, const model::Transformer& model, const model::AdamW& optimizer);
inline constexpr model::DType kCheckpointExportDType = model::DType::kBF16;

// "RUN/checkpoints/step_N (F files, X MB)", for the log line after a checkpoint.
std::string describe_checkpoint(const std::string& run_dir, int64_t step);

// The newest complete checkpoint folder of a run, or not_found saying so.
Expected<std::string> latest_checkpoint(const std::string& run_dir);

// Rank 0, once a run resumes from `step`: the run's checkpoints of later steps (there are some when
// --resume DIR named an earlier one) belong to the branch the run abandons, so each step_N with N
// > step is renamed abandoned_step_N, kept but no longer a checkpoint: a later --resume latest or
// auto (a requeued job) then continues this branch. Returns the folders moved.
Expected<std::vector<std::string>> set_aside_newer_checkpoints(const std::string& run_dir, int64_t step);
// Undoes set_aside_newer_checkpoints (the resume was refused after it: the run stays as it was).
Status bring_back_set_aside(const std::vector<std::string>& moved);

// Reads a checkpoint into a model and optimizer of the same shape; returns its state.json. The
// export is opened and checked against the model; the weights and moments come from the rank
// states. A sharded optimizer (ZeRO) takes the moments of its shard, whatever the number of ranks
// that wrote them. Corrupt, truncated or mismatched files are invalid_input naming
// the file. `weights_of_shard_only`: see load_rank_states (the caller all-gathers the weights).
Expected<nlohmann::json> load_checkpoint(const std::string& dir, model::Transformer& model, model::AdamW& optimizer,
                                         bool weights_of_shard_only = false);

}  // namespace leap::io
