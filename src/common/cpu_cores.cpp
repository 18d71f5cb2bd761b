// cores_for_rank and its parts (see cpu_cores.h).
#include "common/cpu_cores.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <utility>

namespace leap {

namespace {

int read_int(const std::string& path, int fallback) {
  std::ifstream f(path);
  int v = fallback;
  return (f >> v) ? v : fallback;
}

}  // namespace

std::vector<int> affinity_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

int physical_cores(const std::vector<int>& cpus, const std::string& sysfs) {
  std::set<std::pair<int, int>> cores;
  for (int c : cpus) {
    const std::string dir = sysfs + "/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    const int package = read_int(dir + "physical_package_id", -1 - c);
    const int core = read_int(dir + "core_id", -1 - c);
    cores.insert({package, core});
  }
  return static_cast<int>(cores.size());
}

int cores_for_rank(int ranks_on_node) {
  const std::vector<int> mine = affinity_cpus();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<int> all;
  for (int c = 0; c < online; ++c) all.push_back(c);
  const int machine_cores = std::max(1, physical_cores(all));
  if (!mine.empty() && static_cast<long>(mine.size()) < online)
    return std::max(1, physical_cores(mine));
  if (const char* per_task = std::getenv("SLURM_CPUS_PER_TASK")) {
    const int cpus = std::atoi(per_task);
    const int per_core = std::max(1, static_cast<int>(online) / machine_cores);
    if (cpus > 0) return std::max(1, cpus / per_core);
  }
  return std::max(1, machine_cores / std::max(1, ranks_on_node));
}

}  // namespace leap
