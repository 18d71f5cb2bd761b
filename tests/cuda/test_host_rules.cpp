// Host-side rules of the CUDA backend that need no device: which bf16 weight copies a write
// makes stale (for_each_overlap), where a range lies in a model's bf16-only matrices and how a
// copy splits there (storage_runs.h), which drivers run a build (CUDA's minor-version
// compatibility) and the sandbox workers' device lock (DeviceLock). Hand-worked cases.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "cuda/device_lock.h"
#include "cuda/device_probe.h"
#include "cuda/range_overlap.h"
#include "cuda/storage_runs.h"

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

// Two weight buffers in one arena (at floats 100 and 1000) whose first 50 and 0 floats are bf16.
struct Part {
  size_t bf16_floats = 0;
};

TEST(StorageRuns, Bf16PrefixIsThePartOfTheRangeInABuffersMatrices) {
  static float arena[2000];
  const std::map<const float*, Part> buffers = {{arena + 100, {50}}, {arena + 1000, {0}}};
  auto prefix = [&](size_t at, size_t n) { return bf16_prefix(buffers, arena + at, n).second; };
  EXPECT_EQ(prefix(0, 200), 0u);     // before every buffer
  EXPECT_EQ(prefix(100, 10), 10u);   // inside the matrices
  EXPECT_EQ(prefix(120, 100), 30u);  // runs past their end: the bf16 prefix only
  EXPECT_EQ(prefix(149, 5), 1u);
  EXPECT_EQ(prefix(150, 5), 0u);   // the fp32 tail
  EXPECT_EQ(prefix(1000, 5), 0u);  // a buffer without matrices
  EXPECT_EQ(bf16_prefix(buffers, arena + 130, 1).first->first, arena + 100);
}

TEST(StorageRuns, ACopySplitsWhereEitherSideChangesStorage) {
  static float arena[2000];
  const std::map<const float*, Part> buffers = {{arena + 100, {50}}, {arena + 500, {20}}};
  auto prefix = [&](const float* p, size_t n) { return bf16_prefix(buffers, p, n).second; };
  struct Run {
    size_t at, n;
    bool d, s;
    bool operator==(const Run&) const = default;
  };
  auto runs = [&](size_t dst, size_t src, size_t n) {
    std::vector<Run> out;
    for_each_storage_run(arena + dst, arena + src, n, prefix,
                         [&](size_t at, size_t len, bool d, bool s) {
                           out.push_back({at, len, d, s});
                         });
    return out;
  };
  // masters (plain fp32 at 1500) into weights at 130: 20 floats rounded, then 10 copied as fp32.
  EXPECT_EQ(runs(130, 1500, 30), (std::vector<Run>{{0, 20, true, false}, {20, 10, false, false}}));
  // weights at 135 into weights at 510: bf16 to bf16 for 10, then bf16 into fp32, then fp32.
  EXPECT_EQ(runs(510, 135, 25),
            (std::vector<Run>{{0, 10, true, true}, {10, 5, false, true}, {15, 10, false, false}}));
  // Plain memory on both sides: one run.
  EXPECT_EQ(runs(1200, 1600, 40), (std::vector<Run>{{0, 40, false, false}}));
  EXPECT_TRUE(runs(1200, 1600, 0).empty());
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

// The device lock between sandbox workers (flock: two opens of the lock file conflict even in one
// process). Shared holders share; an exclusive one waits for them. A wait with a deadline gives up
// when it passes (a job behind another job's hung kernel), and succeeds once the holder lets go.
TEST(DeviceLock, WaitsGiveUpAtTheirDeadline) {
  char dir_template[] = "/tmp/leap-lock-test-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  using Clock = std::chrono::steady_clock;
  auto in = [](int ms) { return Clock::now() + std::chrono::milliseconds(ms); };
  {
    DeviceLock running("0000:1b:00.0", dir), other_job("0000:1b:00.0", dir), other_gpu("0000:2c:00.0", dir);
    ASSERT_TRUE(running.shared());
    EXPECT_TRUE(other_gpu.exclusive(in(50))) << "another GPU's lock is another file";
    other_gpu.release();
    EXPECT_TRUE(other_job.shared(in(50))) << "shared holders share";
    other_job.release();
    const auto deadline = in(100);
    EXPECT_FALSE(other_job.exclusive(deadline)) << "an exclusive wait behind a running job's kernels";
    EXPECT_GE(Clock::now(), deadline) << "a wait gives up at its deadline, not before";
    EXPECT_FALSE(other_job.exclusive(Clock::now())) << "a deadline already past: one try";
    EXPECT_FALSE(other_job.held());
    running.release();
    EXPECT_TRUE(other_job.exclusive(in(200)));
    EXPECT_TRUE(other_job.held());
    EXPECT_FALSE(running.shared(in(100))) << "no kernel runs beside a timed one";
    other_job.release();
    EXPECT_TRUE(running.shared(in(100)));
  }
  std::filesystem::remove_all(dir);
}

// flock does not queue, so without the gate a timer waiting for the exclusive lock would wait
// behind an endless stream of shared holders: once it waits, a new shared taker is kept out, and
// the timer gets the lock as soon as the holders already in let go.
TEST(DeviceLock, AWaitingTimerKeepsNewSharedHoldersOut) {
  char dir_template[] = "/tmp/leap-lock-test-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  using Clock = std::chrono::steady_clock;
  auto in = [](int ms) { return Clock::now() + std::chrono::milliseconds(ms); };
  {
    DeviceLock holder("0000:1b:00.0", dir), timer("0000:1b:00.0", dir), newcomer("0000:1b:00.0", dir);
    ASSERT_TRUE(holder.shared());
    bool timed = false;
    std::thread waiting([&] { timed = timer.exclusive(in(30000)); });
    // Until the timer is waiting: it holds the gate, so a probe of the gate fails.
    const int probe = ::open((holder.path() + ".gate").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(probe, 0);
    while (::flock(probe, LOCK_SH | LOCK_NB) == 0) {
      ::flock(probe, LOCK_UN);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::close(probe);
    EXPECT_FALSE(newcomer.shared(in(100))) << "a new shared holder got in while a timer waited";
    holder.release();
    waiting.join();
    EXPECT_TRUE(timed);
    EXPECT_FALSE(newcomer.shared(in(50))) << "nothing beside a timed run";
    timer.release();
    EXPECT_TRUE(newcomer.shared(in(500)));
    EXPECT_TRUE(holder.shared(in(500))) << "shared holders share again";
  }
  std::filesystem::remove_all(dir);
}

// The lock file is made world-writable whatever the umask and opened read-only (flock needs no
// write access), so that workers of other users share it; a lock that cannot be opened says why
// and locks nothing.
TEST(DeviceLock, TheFileIsSharedAcrossUsersOrSaysWhyNot) {
  char dir_template[] = "/tmp/leap-lock-test-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  const mode_t old_mask = umask(022);
  {
    DeviceLock first("0000:1b:00.0", dir);
    EXPECT_TRUE(first.unusable_reason().empty()) << first.unusable_reason();
    struct stat st {};
    ASSERT_EQ(stat(first.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
    // As another user's file looks to this one (as root, which the tests may run as, the mode
    // does not stop a read-write open, so this shows the read-only open locks, not that a
    // read-write one would have failed).
    ASSERT_EQ(chmod(first.path().c_str(), 0444), 0);
    DeviceLock second("0000:1b:00.0", dir);
    EXPECT_TRUE(second.unusable_reason().empty()) << second.unusable_reason();
    ASSERT_TRUE(first.exclusive());
    EXPECT_FALSE(second.shared(std::chrono::steady_clock::now())) << "a read-only open still locks";
    first.release();
    EXPECT_TRUE(second.shared(std::chrono::steady_clock::now()));
    DeviceLock nowhere("0000:1b:00.0", std::string(dir) + "/missing");
    EXPECT_NE(nowhere.unusable_reason(), "");
    EXPECT_TRUE(nowhere.exclusive());
    EXPECT_FALSE(nowhere.held());
  }
  umask(old_mask);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace leap::cuda
