// Section [model]: where the policy's folder (config.json + safetensors) is, how large a chunk
// of LM-head logits may be (Transformer::set_logits_chunk_bytes), and how large a weight file
// the run writes (save_model's shards).
#pragma once

#include <string>

#include "common/config.h"

namespace leap::model {

struct ModelOptions {
  std::string path;  // folder with config.json and model.safetensors (or its index)
  int logits_chunk_mib = 256;
  int max_shard_mb = 5000;

  uint64_t max_shard_bytes() const { return static_cast<uint64_t>(max_shard_mb) * 1000000; }
  void declare(OptionSet& opts) {
    opts.add("model.path", &path, std::string(""),
             "Policy folder: config.json + model.safetensors (HF layout).", {.alias = "model"});
    opts.add("model.logits_chunk_mib", &logits_chunk_mib, 256,
             "Largest chunk of LM-head logits (and of their gradient) in MiB: the head runs over "
             "chunks of rows, so no (tokens x vocab) buffer exists. One chunk when they all fit.",
             {.min = 1, .max = 1 << 20});
    opts.add("model.max_shard_mb", &max_shard_mb, 5000,
             "Largest weight file a checkpoint or sft.save_to writes, in MB (10^6 bytes): larger "
             "models go to model-0000k-of-0000n.safetensors shards and model.safetensors.index.json, "
             "as save_pretrained's max_shard_size=\"5GB\" does.",
             {.min = 1});
  }
};

}  // namespace leap::model
