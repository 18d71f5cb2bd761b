// Run checkpoints (DESIGN.md, Checkpoints): RUN/checkpoints/step_NNNNNN/ holds
//   model.safetensors + config.json   the policy, in Hugging Face names (opens in transformers);
//   optimizer.safetensors             AdamW's first and second moments, named like the weights;
//   state.json                        step, optimizer step count, RNG and sampler state, the
//                                     DCP state, and anything else the caller puts there.
// A checkpoint is written into a temporary folder and renamed into place, so a crash never
// leaves a half-written one; only the newest `keep` are kept.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/checkpoint.h"
#include "model/optimizer.h"
#include "model/transformer.h"

namespace leap::io {

std::string checkpoint_dir_name(int64_t step);  // "step_000042"

// The moments in the order a checkpoint's optimizer file holds them: every tensor's first moment
// (`NAME.exp_avg`), in layout order, then every second moment (`NAME.exp_avg_sq`).
struct MomentTensor {
  const model::TensorInfo* tensor = nullptr;
  bool second = false;  // v (exp_avg_sq) rather than m (exp_avg)
};
std::vector<MomentTensor> moment_order(const model::ParameterLayout& layout);

// A sharded optimizer's (ZeRO stage 1) moments, one tensor at a time in moment_order: writes the
// tensor's numel floats to `out`. On rank 0 it is a collective gather, which the other policy
// ranks join in the same order (mpi::serve_moment_gather), so no rank ever holds more than one
// tensor of the moments it does not own.
using MomentSource = std::function<void(const MomentTensor&, float* out)>;

// Writes RUN/checkpoints/step_NNNNNN and prunes older ones beyond `keep`. The tokenizer and
// generation files of `model_dir` (the policy's folder) are copied in, so the checkpoint is a
// complete Hugging Face model folder. The optimizer file holds every parameter's moments, from
// `optimizer`, or tensor by tensor from `sharded` when the optimizer holds a shard.
Status save_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                       model::AdamW& optimizer, const nlohmann::json& state, int keep,
                       const std::string& model_dir,
                       uint64_t max_shard_bytes = model::kDefaultMaxShardBytes, const MomentSource& sharded = {});

// The newest complete checkpoint folder of a run, or not_found saying so.
Expected<std::string> latest_checkpoint(const std::string& run_dir);

// Reads a checkpoint into a model and optimizer of the same shape; returns its state.json.
// A sharded optimizer (ZeRO stage 1) takes the moments of its shard from the file, whatever the
// number of ranks that wrote it. Corrupt, truncated or mismatched files are invalid_input naming
// the file.
Expected<nlohmann::json> load_checkpoint(const std::string& dir, model::Transformer& model, model::AdamW& optimizer);

}  // namespace leap::io
