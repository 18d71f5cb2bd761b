// Task sampler: every task once per epoch, different permutations per epoch, reproducible from
// the seed, and a restored state continues exactly where the saved one stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tasks/task_sampler.h"

namespace leap::tasks {
namespace {

TEST(TaskSampler, EachTaskOncePerEpoch) {
  std::vector<int> pool = {3, 5, 8, 13, 21, 34, 55};
  TaskSampler s(pool, 9);
  std::vector<int> drawn;
  for (int i = 0; i < 7; ++i) {  // 7 batches of 3 = 3 epochs
    auto b = s.next_batch(3);
    drawn.insert(drawn.end(), b.begin(), b.end());
  }
  std::vector<int> e0(drawn.begin(), drawn.begin() + 7), e1(drawn.begin() + 7, drawn.begin() + 14);
  auto sorted = [](std::vector<int> v) { std::sort(v.begin(), v.end()); return v; };
  EXPECT_EQ(sorted(e0), pool);
  EXPECT_EQ(sorted(e1), pool);
  EXPECT_NE(e0, e1);  // a fresh permutation each epoch (7! makes a tie vanishingly unlikely)
  EXPECT_EQ(s.state().epoch, 2);
}

TEST(TaskSampler, ReproducibleAndResumable) {
  std::vector<int> pool(20);
  for (int i = 0; i < 20; ++i) pool[static_cast<size_t>(i)] = i;
  TaskSampler a(pool, 1), b(pool, 1), c(pool, 2);
  EXPECT_EQ(a.next_batch(8), b.next_batch(8));
  EXPECT_NE(TaskSampler(pool, 1).next_batch(8), c.next_batch(8));
  auto saved = a.state();
  auto next = a.next_batch(16);  // crosses into epoch 1
  TaskSampler resumed(pool, 1);
  resumed.set_state(saved);
  EXPECT_EQ(resumed.next_batch(16), next);
}

}  // namespace
}  // namespace leap::tasks
