// A model folder as HF transformers lays it out: config.json beside model.safetensors, or beside
// model.safetensors.index.json and its shards. Tensors carry HF names; lm_head.weight is omitted
// when embeddings are tied. Loading checks that every tensor the config implies is present with
// the right shape, and that no unexpected tensor is left over (a config that does not match the
// file), naming the file and the tensor in every error.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/status.h"
#include "model/safetensors.h"
#include "model/transformer.h"

namespace leap::model {

// Reads DIR/config.json and the weights into a new Transformer on `backend`.
Expected<std::unique_ptr<Transformer>> load_model(const std::string& dir,
                                                  backend::Backend& backend);
// Loads the weights of DIR (single file or sharded) into an existing model whose config matches.
Status load_weights(const std::string& dir, Transformer& model);
// Reads the weights of DIR into host memory laid out as `model`'s parameters (num_params()
// floats), with the same checks; the model itself is not touched.
Status read_weights(const std::string& dir, const Transformer& model, float* host);
// Writes DIR/config.json and the weights (fp32, or bf16 for a policy to ship; config.json's
// torch_dtype says which): DIR/model.safetensors, or, when they exceed max_shard_bytes, shards
// model-0000k-of-0000n.safetensors and model.safetensors.index.json, as transformers'
// save_pretrained lays them out (its default max_shard_size "5GB" is 5e9 bytes). Tensors are
// written one at a time from the backend, never through a host copy of the whole model. Weight
// files of an earlier save in DIR that this one did not write are removed. DIR is created if
// missing.
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;
Status save_model(const std::string& dir, const Transformer& model, DType stored = DType::kF32,
                  uint64_t max_shard_bytes = kDefaultMaxShardBytes);

}  // namespace leap::model
