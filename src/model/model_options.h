// Section [model]: where the policy's folder (config.json + safetensors) is.
#pragma once

#include <string>

#include "common/config.h"

namespace leap::model {

struct ModelOptions {
  std::string path;  // folder with config.json and model.safetensors (or its index)

  void declare(OptionSet& opts) {
    opts.add("model.path", &path, std::string(""),
             "Policy folder: config.json + model.safetensors (HF layout).", {.alias = "model"});
  }
};

}  // namespace leap::model
