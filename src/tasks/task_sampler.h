// Draws the B training tasks of each step: reproducible from the seed and epoch-aware. Each
// epoch is a fresh permutation of the `train` tasks (seeded by (seed, epoch)); steps take B
// consecutive tasks from it, crossing into the next epoch's permutation when one runs out, so
// every task is drawn once per epoch. The state is two integers, saved in checkpoints.
#pragma once

#include <cstdint>
#include <vector>

namespace leap::tasks {

class TaskSampler {
 public:
  // `pool` holds suite indices of the tasks to draw from (e.g. the train split).
  TaskSampler(std::vector<int> pool, uint64_t seed);

  std::vector<int> next_batch(int batch_size);

  struct State {
    int64_t epoch = 0;
    int64_t position = 0;  // within the epoch's permutation
  };
  State state() const { return {epoch_, position_}; }
  void set_state(const State& s);

 private:
  void shuffle_epoch();
  std::vector<int> pool_, order_;
  uint64_t seed_;
  int64_t epoch_ = 0, position_ = 0;
};

}  // namespace leap::tasks
