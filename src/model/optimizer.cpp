// AdamW with clipping and schedule (see optimizer.h).
#include "model/optimizer.h"

#include "common/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace leap::model {

void OptimConfig::declare(OptionSet& opts) {
  opts.add("optim.lr", &lr, 1e-5, "Peak learning rate.", {.min = 0.0});
  opts.add("optim.min_lr", &min_lr, 0.0, "Learning rate at the end of the cosine decay.",
           {.min = 0.0});
  opts.add("optim.warmup_steps", &warmup_steps, 0,
           "Linear warm-up, in optimizer updates (an RL step makes rl.ppo_epochs x rl.mini_batches of "
           "them; an SFT step one).",
           {.min = 0});
  opts.add("optim.total_steps", &total_steps, 0,
           "Optimizer update where the cosine reaches min_lr (counted as optim.warmup_steps); 0 = no decay.",
           {.min = 0});
  // beta = 1 makes AdamW's bias correction 1 - beta^t zero, and eps = 0 divides 0 by 0 for a
  // parameter whose gradient is zero: both give NaN weights.
  opts.add("optim.beta1", &beta1, 0.9, "AdamW beta1, below 1.", {.min = 0.0, .max = 0.999999});
  opts.add("optim.beta2", &beta2, 0.95, "AdamW beta2, below 1.", {.min = 0.0, .max = 0.999999});
  opts.add("optim.eps", &eps, 1e-8, "AdamW epsilon, above 0.", {.min = 1e-30});
  opts.add("optim.weight_decay", &weight_decay, 0.0, "Decoupled weight decay (matrices only).",
           {.min = 0.0});
  opts.add("optim.grad_clip", &grad_clip, 1.0, "Clip the global gradient L2 norm to this; 0 = off.",
           {.min = 0.0});
  opts.add("optim.zero_stage", &zero_stage, 0,
           "ZeRO: 0 = every policy rank keeps AdamW's moments of all parameters; 1 = each keeps "
           "those of its shard (1/ranks of them; gradients reduce-scattered, weights all-gathered); "
           "2 = gradients sharded too (each layer's reduce-scattered as its backward finishes). "
           "MPI on the CPU backend, NCCL on CUDA.",
           {.min = 0, .max = 2});
  opts.add("optim.grad_comm_dtype", &grad_comm_dtype, std::string("fp32"),
           "How gradients travel between policy ranks (the sum, or ZeRO's reduce-scatter): fp32, or "
           "bf16 for half the bytes (each rank's gradient and every partial sum rounded to bf16; "
           "accumulation over micro-batches stays fp32).",
           {.choices = {"fp32", "bf16"}});
  opts.add("optim.master_weights", &master_weights, std::string("replica"),
           "Where the fp32 master weights live: replica (the model's own fp32 weights, whole on "
           "every policy rank), or optimizer (in AdamW's state, sharded with it under ZeRO, while "
           "the model keeps its matrices in bf16 only: at 7B on 8 ranks 3.5 GiB of masters a rank "
           "instead of 28.4; on CUDA not yet run on a GPU).",
           {.choices = {"replica", "optimizer"}});
}

Status OptimConfig::validate() const {
  if (min_lr > lr)
    return invalid_input(fmt::format("option 'optim.min_lr' = {} is above 'optim.lr' = {}: the decay would raise the "
                                     "learning rate; lower optim.min_lr",
                                     min_lr, lr));
  if (total_steps > 0 && warmup_steps >= total_steps)
    return invalid_input(fmt::format("option 'optim.warmup_steps' = {} is not below 'optim.total_steps' = {}: the "
                                     "cosine decay would never run; lower the warm-up, raise total_steps, or set "
                                     "optim.total_steps = 0 for no decay",
                                     warmup_steps, total_steps));
  return Status::ok();
}

AdamW::AdamW(const OptimConfig& cfg, Transformer& model,
             std::optional<std::vector<std::pair<size_t, size_t>>> shard)
    : cfg_(cfg), model_(&model) {
  shard_ = shard ? std::move(*shard) : std::vector<std::pair<size_t, size_t>>{{0, model.num_params()}};
  for (const auto& [off, n] : shard_) {
    LEAP_CHECK(off + n <= model.num_params(), "AdamW shard past the parameters");
    state_offset_.push_back(state_floats_);
    state_floats_ += n;
  }
  m_ = model.backend().alloc_floats(state_floats_);
  v_ = model.backend().alloc_floats(state_floats_);
  if (model.weight_storage() == WeightStorage::kBf16Matrices) {
    masters_ = model.backend().alloc_floats(state_floats_);
    for (size_t k = 0; k < shard_.size(); ++k)
      model.backend().copy(masters_ + state_offset_[k], model.params() + shard_[k].first,
                           shard_[k].second);
  }
}

AdamW::~AdamW() {
  model_->backend().free_floats(m_);
  model_->backend().free_floats(v_);
  model_->backend().free_floats(masters_);
}

void AdamW::publish_masters() {
  if (masters_ == nullptr) return;
  for (size_t k = 0; k < shard_.size(); ++k)
    model_->backend().copy(model_->params() + shard_[k].first, masters_ + state_offset_[k],
                           shard_[k].second);
}

namespace {

// Calls fn(k, lo, hi) for every shard range k that overlaps [offset, offset + n), [lo, hi) being
// the overlap, in flat floats.
template <class Fn>
void for_each_overlap(const std::vector<std::pair<size_t, size_t>>& shard, size_t offset, size_t n,
                      Fn fn) {
  for (size_t k = 0; k < shard.size(); ++k) {
    const auto [off, count] = shard[k];
    const size_t lo = std::max(off, offset), hi = std::min(off + count, offset + n);
    if (lo < hi) fn(k, lo, hi);
  }
}

}  // namespace

void AdamW::upload_state(float* state, size_t offset, const float* host, size_t n) {
  for_each_overlap(shard_, offset, n, [&](size_t k, size_t lo, size_t hi) {
    model_->backend().upload(state + state_offset_[k] + (lo - shard_[k].first),
                             host + (lo - offset), hi - lo);
  });
}

void AdamW::upload_shard_weights(size_t offset, const float* host, size_t n) {
  for_each_overlap(shard_, offset, n, [&](size_t, size_t lo, size_t hi) {
    model_->backend().upload(model_->params() + lo, host + (lo - offset), hi - lo);
  });
}

bool AdamW::holds_any(size_t offset, size_t n) const {
  bool any = false;
  for_each_overlap(shard_, offset, n, [&](size_t, size_t, size_t) { any = true; });
  return any;
}

StepStats AdamW::step(const std::function<double(double)>& group_sum, const float* shard_grads,
                      double grad_multiplier) {
  backend::Backend& be = model_->backend();
  const size_t nd = model_->layout().decay_size();
  LEAP_CHECK(shard_grads != nullptr || model_->grads() != nullptr, "AdamW step without a gradient");
  // Shard range k's gradient: in the flat buffer, or in the compact one at the moments' offset.
  auto grad = [&](size_t k) {
    return shard_grads ? shard_grads + state_offset_[k] : model_->grads() + shard_[k].first;
  };
  StepStats s;
  double sq = 0;
  for (size_t k = 0; k < shard_.size(); ++k) sq += be.sum_squares(grad(k), shard_[k].second);
  s.grad_norm = std::sqrt(group_sum ? group_sum(sq) : sq) * std::abs(grad_multiplier);
  // A NaN or infinite gradient (a diverged loss, a non-finite log-probability) would write NaN
  // into every weight it reaches, and the next checkpoint would keep them. The run stops before
  // the update instead; every rank sees the same norm (it is the group's), so all stop here.
  if (!std::isfinite(s.grad_norm))
    LEAP_FATAL("the gradient is not finite (norm " << s.grad_norm << ") at optimizer step " << t_ + 1
               << ": the weights were not updated and the run stops, its last checkpoint intact; resume from it "
                  "with a lower optim.lr, or look in the step's trajectories for a non-finite loss or log-probability");
  // torch.nn.utils.clip_grad_norm_'s rule, 1e-6 included, so runs match PyTorch's.
  const double clip = cfg_.grad_clip > 0 ? std::min(1.0, cfg_.grad_clip / (s.grad_norm + 1e-6)) : 1.0;
  const float scale = static_cast<float>(clip * grad_multiplier);
  ++t_;
  s.step = t_;
  s.lr = cfg_.schedule().at(t_);
  const float lr = static_cast<float>(s.lr), b1 = static_cast<float>(cfg_.beta1),
              b2 = static_cast<float>(cfg_.beta2);
  const float eps = static_cast<float>(cfg_.eps), wd = static_cast<float>(cfg_.weight_decay);
  for (size_t k = 0; k < shard_.size(); ++k) {
    const auto [off, n] = shard_[k];
    const size_t at = state_offset_[k];  // into the compact moments
    // Weight decay on the matrices only: the part of the range below decay_size.
    const size_t decayed = off >= nd ? 0 : std::min(n, nd - off);
    float* p = masters_ ? masters_ + at : model_->params() + off;
    const float* g = grad(k);
    if (decayed > 0) be.adamw_update(p, m_ + at, v_ + at, g, decayed, lr, b1, b2, eps, wd, scale, t_);
    if (n > decayed)
      be.adamw_update(p + decayed, m_ + at + decayed, v_ + at + decayed, g + decayed, n - decayed, lr,
                      b1, b2, eps, 0.0f, scale, t_);
  }
  publish_masters();
  return s;
}

}  // namespace leap::model
