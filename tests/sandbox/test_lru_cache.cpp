// LruCache, the bounded map under the verdict and reference-output caches: eviction order by
// use, the cost bound, the first of two inserts kept, hit and miss counts. Hand-worked cases.
#include <gtest/gtest.h>

#include "sandbox/lru_cache.h"

namespace leap::sandbox {
namespace {

TEST(LruCache, EvictsTheLeastRecentlyUsedOnceTheCostBoundIsPassed) {
  LruCache<int> c(10);
  c.insert("a", 1, 4);
  c.insert("b", 2, 4);
  EXPECT_EQ(c.find("a"), 1);  // a is now the most recent, b the least
  c.insert("c", 3, 4);        // 12 > 10: b goes
  EXPECT_EQ(c.find("b"), std::nullopt);
  EXPECT_EQ(c.find("a"), 1);
  EXPECT_EQ(c.find("c"), 3);
  c.insert("d", 4, 9);  // needs 9 of 10: a and c both go
  EXPECT_EQ(c.find("a"), std::nullopt);
  EXPECT_EQ(c.find("c"), std::nullopt);
  EXPECT_EQ(c.find("d"), 4);
  EXPECT_EQ(c.hits(), 4u);
  EXPECT_EQ(c.misses(), 3u);
}

TEST(LruCache, KeepsTheFirstInsertAndRefusesWhatCannotFit) {
  LruCache<int> c(10);
  c.insert("a", 1, 2);
  c.insert("a", 99, 2);  // two threads computed the same key: the first stays
  EXPECT_EQ(c.find("a"), 1);
  c.insert("huge", 5, 11);  // larger than the whole bound: not kept, and a survives
  EXPECT_EQ(c.find("huge"), std::nullopt);
  EXPECT_EQ(c.find("a"), 1);
  LruCache<int> off(0);  // a bound of 0 keeps nothing
  off.insert("a", 1, 1);
  EXPECT_EQ(off.find("a"), std::nullopt);
}

}  // namespace
}  // namespace leap::sandbox
