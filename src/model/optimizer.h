// AdamW over the flat parameter buffer, with global-norm clipping and the warm-up + cosine
// schedule. Weight decay applies to the matrices only (the layout's decay prefix); norms and
// biases take none, as in llm.c and most HF recipes. Call step() once per optimizer step, after
// the gradients of all micro-batches (and ranks) have been summed into model.grads().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
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
  int zero_stage = 0;      // 0: replicas; 1: moments sharded (mpi/zero_shard.h); 2: gradients too (mpi/zero_gradients.h)
  std::string grad_comm_dtype = "fp32";  // how gradients travel between policy ranks: fp32 or bf16
  // Where the fp32 master weights live: "replica" (the model's own fp32 weights, on every rank)
  // or "optimizer" (in AdamW's state, sharded with it under ZeRO; the model's matrices bf16:
  // WeightStorage::kBf16Matrices).
  std::string master_weights = "replica";

  // Section [optim].
  void declare(OptionSet& opts);
  // What involves several options: min_lr at most lr, a warm-up that ends before the decay's end.
  Status validate() const;
  backend::LrSchedule schedule() const { return {lr, min_lr, warmup_steps, total_steps}; }
  bool masters_in_optimizer() const { return master_weights == "optimizer"; }
};

struct StepStats {
  double grad_norm = 0;  // before clipping
  double lr = 0;
  int step = 0;  // 1-based count after this step
};

class AdamW {
 public:
  // The moments of every parameter, or with `shard` (ranges (offset, count) of the flat buffer,
  // sorted, disjoint; possibly none) of those floats only: ZeRO stage 1 (mpi/zero_shard.h),
  // where each rank updates its shard. The moments are stored compactly, range after range.
  // A model with bf16 matrices (WeightStorage::kBf16Matrices) gets fp32 master weights here too,
  // compact like the moments and copied from the model's weights now (so those of an fp32
  // checkpoint are its bf16 rounding; a LEAP checkpoint's rank states restore them exactly):
  // step() updates them and writes them, rounded, into the model's weights at the shard.
  AdamW(const OptimConfig& cfg, Transformer& model,
        std::optional<std::vector<std::pair<size_t, size_t>>> shard = std::nullopt);
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  // Clips by the global gradient norm and updates the shard. group_sum turns this rank's sum of
  // squares into the group's (ZeRO: every rank's shard); empty: the shard is everything. The
  // gradient is model.grads() at the shard's ranges, or with `shard_grads` (ZeRO stage 2, whose
  // model keeps no whole gradient) that buffer, compact like the moments (state_floats()).
  // grad_multiplier: the gradient is that many times the buffer (a loss normaliser applied only
  // here, when the buffer was accumulated before the normaliser was known: the streaming
  // pipeline's training during the rollout); the norm and the clip see the true gradient.
  StepStats step(const std::function<double(double)>& group_sum = {}, const float* shard_grads = nullptr,
                 double grad_multiplier = 1.0);
  const std::vector<std::pair<size_t, size_t>>& shard() const { return shard_; }
  size_t state_floats() const { return state_floats_; }  // floats of m (and of v)
  // Where shard()[k] starts in the compact moments.
  size_t state_offset(size_t k) const { return state_offset_[k]; }
  int steps_taken() const { return t_; }
  backend::Backend& backend() const { return model_->backend(); }
  // Moment buffers (backend memory, state_floats() each) and the step count, for checkpoints.
  float* m() { return m_; }
  const float* m() const { return m_; }
  float* v() { return v_; }
  const float* v() const { return v_; }
  // The fp32 master weights of the shard (compact like the moments), or null when the model's
  // own fp32 weights are the masters.
  float* masters() { return masters_; }
  const float* masters() const { return masters_; }
  // Writes the masters, rounded, into the model's weights at the shard (after they were loaded).
  void publish_masters();
  // Uploads the parts of the flat floats [offset, offset + n), given in host memory, that the
  // shard holds into `state` (m(), v() or masters(): compact, range after range).
  void upload_state(float* state, size_t offset, const float* host, size_t n);
  // The same parts, into the model's flat weights at their own place (a resume whose caller
  // all-gathers the weights reads only its shard's).
  void upload_shard_weights(size_t offset, const float* host, size_t n);
  // Whether the shard holds any of the flat floats [offset, offset + n).
  bool holds_any(size_t offset, size_t n) const;
  void set_steps_taken(int t) { t_ = t; }

 private:
  OptimConfig cfg_;
  Transformer* model_;
  std::vector<std::pair<size_t, size_t>> shard_;
  std::vector<size_t> state_offset_;  // prefix sums of the shard's counts
  size_t state_floats_ = 0;
  float* m_ = nullptr;
  float* v_ = nullptr;
  float* masters_ = nullptr;
  int t_ = 0;
};

}  // namespace leap::model
