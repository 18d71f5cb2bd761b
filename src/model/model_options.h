// Section [model]: where the policy's folder (config.json + safetensors) is, and how large a
// chunk of LM-head logits may be (Transformer::set_logits_chunk_bytes).
#pragma once

#include <string>

#include "common/config.h"

namespace leap::model {

struct ModelOptions {
  std::string path;  // folder with config.json and model.safetensors (or its index)
  int logits_chunk_mib = 256;

  void declare(OptionSet& opts) {
    opts.add("model.path", &path, std::string(""),
             "Policy folder: config.json + model.safetensors (HF layout).", {.alias = "model"});
    opts.add("model.logits_chunk_mib", &logits_chunk_mib, 256,
             "Largest chunk of LM-head logits (and of their gradient) in MiB: the head runs over "
             "chunks of rows, so no (tokens x vocab) buffer exists. One chunk when they all fit.",
             {.min = 1, .max = 1 << 20});
  }
};

}  // namespace leap::model
