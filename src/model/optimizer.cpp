// AdamW with clipping and schedule (see optimizer.h).
#include "model/optimizer.h"

#include <algorithm>
#include <cmath>

namespace leap::model {

void OptimConfig::declare(OptionSet& opts) {
  opts.add("optim.lr", &lr, 1e-5, "Peak learning rate.", {.min = 0.0});
  opts.add("optim.min_lr", &min_lr, 0.0, "Learning rate at the end of the cosine decay.",
           {.min = 0.0});
  opts.add("optim.warmup_steps", &warmup_steps, 0, "Linear warm-up steps.", {.min = 0});
  opts.add("optim.total_steps", &total_steps, 0,
           "Step where the cosine reaches min_lr; 0 = no decay.", {.min = 0});
  opts.add("optim.beta1", &beta1, 0.9, "AdamW beta1.", {.min = 0.0, .max = 1.0});
  opts.add("optim.beta2", &beta2, 0.95, "AdamW beta2.", {.min = 0.0, .max = 1.0});
  opts.add("optim.eps", &eps, 1e-8, "AdamW epsilon.", {.min = 0.0});
  opts.add("optim.weight_decay", &weight_decay, 0.0, "Decoupled weight decay (matrices only).",
           {.min = 0.0});
  opts.add("optim.grad_clip", &grad_clip, 1.0, "Clip the global gradient L2 norm to this; 0 = off.",
           {.min = 0.0});
}

AdamW::AdamW(const OptimConfig& cfg, Transformer& model) : cfg_(cfg), model_(&model) {
  m_ = model.backend().alloc_floats(model.num_params());
  v_ = model.backend().alloc_floats(model.num_params());
}

AdamW::~AdamW() {
  model_->backend().free_floats(m_);
  model_->backend().free_floats(v_);
}

StepStats AdamW::step() {
  backend::Backend& be = model_->backend();
  const size_t n = model_->num_params(), nd = model_->layout().decay_size();
  StepStats s;
  s.grad_norm = std::sqrt(be.sum_squares(model_->grads(), n));
  // torch.nn.utils.clip_grad_norm_'s rule, 1e-6 included, so runs match PyTorch's.
  const float scale = cfg_.grad_clip > 0
                          ? static_cast<float>(std::min(1.0, cfg_.grad_clip / (s.grad_norm + 1e-6)))
                          : 1.0f;
  ++t_;
  s.step = t_;
  s.lr = cfg_.schedule().at(t_);
  const float lr = static_cast<float>(s.lr), b1 = static_cast<float>(cfg_.beta1),
              b2 = static_cast<float>(cfg_.beta2);
  const float eps = static_cast<float>(cfg_.eps), wd = static_cast<float>(cfg_.weight_decay);
  be.adamw_update(model_->params(), m_, v_, model_->grads(), nd, lr, b1, b2, eps, wd, scale, t_);
  be.adamw_update(model_->params() + nd, m_ + nd, v_ + nd, model_->grads() + nd, n - nd, lr, b1, b2,
                  eps, 0.0f, scale, t_);
  return s;
}

}  // namespace leap::model
