// Token balancing: loads differ by at most one item's weight, for random weights and rank
// counts; every item is assigned once; the assignment is deterministic. Micro-batch order:
// increasing length, ties in their original order.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/rng.h"
#include "mpi/work_balance.h"

namespace leap::mpi {
namespace {

TEST(WorkBalance, WithinOneItemOfEachOther) {
  Rng rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    int ranks = 1 + static_cast<int>(rng.below(8));
    std::vector<int64_t> w(rng.below(60));
    for (auto& x : w) x = 1 + static_cast<int64_t>(rng.below(2000));
    auto owner = balance_by_weight(w, ranks);
    ASSERT_EQ(owner.size(), w.size());
    for (int o : owner) ASSERT_TRUE(o >= 0 && o < ranks);
    auto load = rank_loads(w, owner, ranks);
    int64_t biggest = w.empty() ? 0 : *std::max_element(w.begin(), w.end());
    auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, biggest) << "trial " << trial;
    EXPECT_EQ(balance_by_weight(w, ranks), owner);
  }
}

TEST(WorkBalance, SortByLengthIsStable) {
  struct Seq {
    std::vector<int32_t> tokens;
    int id;
  };
  std::vector<Seq> seqs = {{{1, 2, 3}, 0}, {{1}, 1}, {{1, 2, 3}, 2}, {{1, 2}, 3}, {{4}, 4}};
  std::vector<const Seq*> order;
  for (const auto& s : seqs) order.push_back(&s);
  sort_by_length(order);
  std::vector<int> ids;
  for (const Seq* s : order) ids.push_back(s->id);
  EXPECT_EQ(ids, (std::vector<int>{1, 4, 3, 0, 2}));
}

TEST(WorkBalance, HandWorked) {
  // 7, 5, 4, 3, 1 on 2 ranks: 7->0, 5->1, 4->1 (9), 3->0 (10), 1->1 (10).
  auto owner = balance_by_weight({3, 7, 1, 5, 4}, 2);
  EXPECT_EQ(owner, (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(rank_loads({3, 7, 1, 5, 4}, owner, 2), (std::vector<int64_t>{10, 10}));
}

}  // namespace
}  // namespace leap::mpi
