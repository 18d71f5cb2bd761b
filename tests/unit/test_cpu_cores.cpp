// physical_cores: hyperthreads of one core count once, cores of two packages with the same
// core_id count twice, a CPU without readable topology counts alone. On a hand-made sysfs tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/cpu_cores.h"

namespace leap {
namespace {

namespace fs = std::filesystem;

void write_cpu(const fs::path& root, int cpu, int package, int core) {
  fs::path dir = root / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
  fs::create_directories(dir);
  std::ofstream(dir / "physical_package_id") << package << "\n";
  std::ofstream(dir / "core_id") << core << "\n";
}

TEST(CpuCores, HyperthreadsCountOnce) {
  fs::path root = fs::path(::testing::TempDir()) / "leap_sysfs";
  fs::remove_all(root);
  // 2 packages x 2 cores x 2 threads: cpu0/cpu4 share package 0 core 0, and so on.
  for (int t = 0; t < 2; ++t)
    for (int p = 0; p < 2; ++p)
      for (int c = 0; c < 2; ++c) write_cpu(root, t * 4 + p * 2 + c, p, c);
  EXPECT_EQ(physical_cores({0, 1, 2, 3, 4, 5, 6, 7}, root.string()), 4);
  EXPECT_EQ(physical_cores({0, 4}, root.string()), 1);      // one core, both threads
  EXPECT_EQ(physical_cores({0, 2}, root.string()), 2);      // core 0 of each package
  EXPECT_EQ(physical_cores({0, 99}, root.string()), 2);     // cpu99 has no topology
  fs::remove_all(root);
}

TEST(CpuCores, ThisProcessGetsAtLeastOneThread) {
  EXPECT_FALSE(affinity_cpus().empty());
  EXPECT_GE(cores_for_rank(1), 1);
  EXPECT_GE(cores_for_rank(64), 1);
}

}  // namespace
}  // namespace leap
