// Options of `leap train` beyond the modules' own sections: [train] (mode, length, batch,
// checkpoints, resume) and [output] (SWMR). Declared once here.
#pragma once

#include <string>

#include "common/config.h"

namespace leap::app {

struct TrainOptions {
  std::string mode = "rl";     // rl | sft
  int steps = 10;
  int batch_tasks = 4;         // B: tasks per RL step
  int micro_batch_seqs = 8;
  int checkpoint_every = 25;   // 0: no step rule
  double checkpoint_minutes = 30;  // 0: no time rule
  int keep_checkpoints = 3;
  int check_replicas_every = 0;
  bool activation_checkpointing = false;  // per-layer recomputation in the backward
  bool random_init = false;    // start from config.json with random weights (tests, from-scratch SFT)
  std::string resume;          // "", "latest", "auto", or a checkpoint folder
  std::string swmr = "auto";   // auto | on | off
  void declare(OptionSet& opts);
};

}  // namespace leap::app
