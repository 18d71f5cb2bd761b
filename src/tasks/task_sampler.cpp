// Epoch-wise permutations of the task pool, drawn B at a time.
#include "tasks/task_sampler.h"

#include <utility>

#include "common/rng.h"

namespace leap::tasks {

TaskSampler::TaskSampler(std::vector<int> pool, uint64_t seed) : pool_(std::move(pool)), seed_(seed) {
  shuffle_epoch();
}

void TaskSampler::shuffle_epoch() {
  order_ = pool_;
  Rng rng(seed_, 0x7a5c0000ull + static_cast<uint64_t>(epoch_));
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);  // Fisher-Yates
}

std::vector<int> TaskSampler::next_batch(int batch_size) {
  std::vector<int> out;
  if (pool_.empty()) return out;
  while (static_cast<int>(out.size()) < batch_size) {
    if (position_ >= static_cast<int64_t>(order_.size())) {
      ++epoch_;
      position_ = 0;
      shuffle_epoch();
    }
    out.push_back(order_[static_cast<size_t>(position_++)]);
  }
  return out;
}

void TaskSampler::set_state(const State& s) {
  epoch_ = s.epoch;
  position_ = s.position;
  shuffle_epoch();
}

}  // namespace leap::tasks
