// Learning-rate schedule: linear warm-up from 0 to peak over warmup_steps, then cosine decay to
// min_lr at total_steps (and min_lr after). Steps are 1-based, as AdamW's step count.
#pragma once

#include <cmath>

namespace leap::backend {

struct LrSchedule {
  double peak_lr = 1e-4;
  double min_lr = 0.0;
  int warmup_steps = 0;
  int total_steps = 0;  // 0 = constant peak_lr after warm-up

  double at(int step) const {
    if (warmup_steps > 0 && step <= warmup_steps) return peak_lr * step / warmup_steps;
    if (total_steps <= warmup_steps) return peak_lr;
    if (step >= total_steps) return min_lr;
    double progress = static_cast<double>(step - warmup_steps) / (total_steps - warmup_steps);
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + std::cos(M_PI * progress));
  }
};

}  // namespace leap::backend
