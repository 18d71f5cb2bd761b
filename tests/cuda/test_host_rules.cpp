// Host-side rules of the CUDA backend that need no device: which bf16 weight copies a write
// makes stale (for_each_overlap) and which drivers run a build (CUDA's minor-version
// compatibility). Hand-worked cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "cuda/device_probe.h"
#include "cuda/range_overlap.h"

namespace leap::cuda {
namespace {

struct Range {
  size_t n = 0;
  bool hit = false;
};

// Starts (offsets into one arena) of the ranges hit by a write of [at, at + n).
std::vector<size_t> hits(std::map<const float*, Range> ranges, const float* base, size_t at,
                         size_t n) {
  size_t longest = 0;
  for (const auto& [p, r] : ranges) longest = std::max(longest, r.n);
  for_each_overlap(ranges, base + at, n, longest, [](Range& r) { r.hit = true; });
  std::vector<size_t> out;
  for (const auto& [p, r] : ranges)
    if (r.hit) out.push_back(static_cast<size_t>(p - base));
  return out;
}

TEST(RangeOverlap, AnEarlierLargerRangeIsHitThroughSmallerOnesInside) {
  std::vector<float> arena(1000);
  const float* a = arena.data();
  // A whole matrix [0, 600), then two rows inside it, [100, 110) and [300, 310).
  std::map<const float*, Range> r{{a, {600}}, {a + 100, {10}}, {a + 300, {10}}};
  // A write at 400 touches only the matrix, though two smaller ranges start in between.
  EXPECT_EQ(hits(r, a, 400, 5), (std::vector<size_t>{0}));
  EXPECT_EQ(hits(r, a, 305, 1), (std::vector<size_t>{0, 300}));
  EXPECT_EQ(hits(r, a, 50, 300), (std::vector<size_t>{0, 100, 300}));
  EXPECT_EQ(hits(r, a, 600, 100), (std::vector<size_t>{}));  // just past the matrix
  EXPECT_EQ(hits(r, a, 599, 1), (std::vector<size_t>{0}));   // its last element
  EXPECT_EQ(hits(r, a, 0, 0), (std::vector<size_t>{}));      // an empty write
}

TEST(RangeOverlap, DisjointRangesAndTheBoundaries) {
  std::vector<float> arena(100);
  const float* a = arena.data();
  std::map<const float*, Range> r{{a + 10, {10}}, {a + 20, {10}}, {a + 40, {5}}};
  EXPECT_EQ(hits(r, a, 19, 2), (std::vector<size_t>{10, 20}));
  EXPECT_EQ(hits(r, a, 30, 10), (std::vector<size_t>{}));
  EXPECT_EQ(hits(r, a, 0, 100), (std::vector<size_t>{10, 20, 40}));
  EXPECT_EQ(hits(r, a, 44, 1), (std::vector<size_t>{40}));
}

TEST(DriverRule, SameMajorRunsAnyMinorOlderMajorDoesNot) {
  EXPECT_TRUE(driver_runs_build(13000, 13000));
  EXPECT_TRUE(driver_runs_build(13000, 13020));   // 13.0 driver, 13.2 toolkit: minor compat
  EXPECT_TRUE(driver_runs_build(12020, 12080));   // 12.2 driver, 12.8 toolkit
  EXPECT_TRUE(driver_runs_build(13000, 12080));   // a newer driver runs an older build
  EXPECT_FALSE(driver_runs_build(12090, 13000));  // CUDA 13 needs a 13.x driver (580+)
  EXPECT_FALSE(driver_runs_build(0, 12000));      // no driver
  EXPECT_EQ(minimum_driver(13), "580");
  EXPECT_EQ(minimum_driver(12), "525.60.13");
}

}  // namespace
}  // namespace leap::cuda
