// AdamW over the flat parameter buffer, with global-norm clipping and the warm-up + cosine
// schedule. Weight decay applies to the matrices only (the layout's decay prefix); norms and
// biases take none, as in llm.c and most HF recipes. Call step() once per optimizer step, after
// the gradients of all micro-batches (and ranks) have been summed into model.grads().
#pragma once

#include <cstdint>
#include <vector>

#include "backend/lr_schedule.h"
#include "common/config.h"
#include "model/transformer.h"

namespace leap::model {

struct OptimConfig {
  double lr = 1e-5;     // peak learning rate
  double min_lr = 0.0;  // end of the cosine
  int warmup_steps = 0;
  int total_steps = 0;  // 0 = constant after warm-up
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double grad_clip = 1.0;  // max global L2 norm; 0 = no clipping

  // Section [optim].
  void declare(OptionSet& opts);
  backend::LrSchedule schedule() const { return {lr, min_lr, warmup_steps, total_steps}; }
};

struct StepStats {
  double grad_norm = 0;  // before clipping
  double lr = 0;
  int step = 0;  // 1-based count after this step
};

class AdamW {
 public:
  AdamW(const OptimConfig& cfg, Transformer& model);
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  StepStats step();
  int steps_taken() const { return t_; }
  // Moment buffers (backend memory, layout floats) and the step count, for checkpoints.
  float* m() { return m_; }
  float* v() { return v_; }
  void set_steps_taken(int t) { t_ = t; }

 private:
  OptimConfig cfg_;
  Transformer* model_;
  float* m_ = nullptr;
  float* v_ = nullptr;
  int t_ = 0;
};

}  // namespace leap::model
