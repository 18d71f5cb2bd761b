// A model folder as HF transformers lays it out: config.json beside model.safetensors, or beside
// model.safetensors.index.json and its shards. Tensors carry HF names; lm_head.weight is omitted
// when embeddings are tied. Loading checks that every tensor the config implies is present with
// the right shape, and that no unexpected tensor is left over (a config that does not match the
// file), naming the file and the tensor in every error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/status.h"
#include "model/safetensors.h"
#include "model/transformer.h"

namespace leap::model {

// DIR/config.json. When DIR is missing and an export stopped between its renames (see
// begin_staged_export), the error names the earlier copy to rename back.
Expected<ModelConfig> read_folder_config(const std::string& dir);

// Reads DIR/config.json and the weights into a new Transformer on `backend`, with the gradient
// buffer `gradient` asks for and the weights stored as `storage` says (bf16 matrices: an fp32
// checkpoint's matrices are rounded as they load).
Expected<std::unique_ptr<Transformer>> load_model(const std::string& dir, backend::Backend& backend,
                                                  GradientBuffer gradient = GradientBuffer::kFlat,
                                                  WeightStorage storage = WeightStorage::kFp32);
// Loads the weights of DIR (single file or sharded) into an existing model whose config matches.
Status load_weights(const std::string& dir, Transformer& model);
// The checks of load_weights without reading the data: every tensor the config implies is
// present with its shape, and no other (the headers are checked against the files' sizes).
Status check_weights(const std::string& dir, const Transformer& model);
// Reads the weights of DIR one tensor at a time, as fp32 in one host buffer of the largest
// tensor, and hands each to `take` (valid during the call), with the checks of load_weights:
// never a host copy of the whole model.
Status stream_weights(const std::string& dir, const Transformer& model,
                      const std::function<void(const TensorInfo&, const float*)>& take);
// Reads the weights of DIR into host memory laid out as `model`'s parameters (num_params()
// floats), with the same checks; the model itself is not touched.
Status read_weights(const std::string& dir, const Transformer& model, float* host);
// Writes DIR/config.json and the weights (fp32, or bf16 for a policy to ship; config.json's
// torch_dtype says which): DIR/model.safetensors, or, when they exceed max_shard_bytes, shards
// model-0000k-of-0000n.safetensors and model.safetensors.index.json, as transformers'
// save_pretrained lays them out (its default max_shard_size "5GB" is 5e9 bytes). Tensors are
// written one at a time from the backend, never through a host copy of the whole model. The
// save is staged (begin_staged_export): DIR is replaced whole, so a crash leaves the earlier save
// as it was; its other files (not weights or config.json) stay. DIR is created if missing.
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;
Status save_model(const std::string& dir, const Transformer& model, DType stored = DType::kF32,
                  uint64_t max_shard_bytes = kDefaultMaxShardBytes);

// save_model in three parts, so that several ranks can write one export's shards in parallel
// (mpi/checkpoint_write.h): every rank plans the same shards; one rank begins, each writes the
// shards it is given, and one finishes once all are written.
struct ModelExport {
  DType stored = DType::kF32;
  std::vector<std::vector<size_t>> shards;  // indices into the layout's tensors, consecutive
  uint64_t total_bytes = 0;
  // "model.safetensors" when there is one shard, else "model-0000k-of-0000n.safetensors".
  std::string shard_name(size_t k) const;
};
ModelExport plan_model_export(const ParameterLayout& layout, DType stored,
                              uint64_t max_shard_bytes = kDefaultMaxShardBytes);
// Creates DIR and removes an earlier save's index, so that an export cut short never leaves an
// index that points at old shards (the loader would prefer it).
Status begin_model_export(const std::string& dir);
// Writes the shards k with k % world == rank, tensor by tensor from the backend (no host copy of
// the model): rank 0 of 1 writes them all.
Status write_model_shards(const std::string& dir, const Transformer& model, const ModelExport& plan, int rank,
                          int world);
// config.json, the index (when sharded), and the removal of weight files of an earlier save.
Status finish_model_export(const std::string& dir, const Transformer& model, const ModelExport& plan);

// An export that replaces a folder as a whole (save_model, sft.save_to): begin_staged_export
// makes an empty staging folder beside DIR (".tmp_NAME"), the export is written into it, and
// install_staged_export swaps it in with two renames (DIR to ".old_NAME", the staging folder to
// DIR), then removes the old one. A crash before the renames leaves DIR as it was; one between
// them leaves the earlier export only as ".old_NAME", which the next begin_staged_export puts
// back first. Returns the staging folder; a staging or ".old_" folder of an earlier attempt is
// removed.
Expected<std::string> begin_staged_export(const std::string& dir);
// Files in DIR that are not the export's (anything but weight files and config.json: a README,
// the tokenizer when the export brings none) are carried into the staging folder (hard links where
// the file system allows) before the swap.
Status install_staged_export(const std::string& staging, const std::string& dir);

}  // namespace leap::model
