// How many cores a rank may use: the CPUs the launcher bound it to, counted as physical cores
// (hyperthreads of one core count once: one BLAS thread per core is the fast setting), read
// from the process's affinity and sysfs. Used for the policy rank's thread count.
#pragma once

#include <string>
#include <vector>

namespace leap {

// The CPUs in this process's affinity mask.
std::vector<int> affinity_cpus();

// Distinct (package, core) pairs among `cpus`, from SYSFS/devices/system/cpu/cpuN/topology.
// A CPU whose topology cannot be read counts as a core of its own.
int physical_cores(const std::vector<int>& cpus, const std::string& sysfs = "/sys");

// Threads for one rank: the physical cores of its affinity when the launcher bound it (the
// mask is smaller than the machine), else SLURM_CPUS_PER_TASK (CPUs in Slurm's sense, so
// hyperthreads are divided out), else the machine's cores shared by `ranks_on_node`. At least 1.
int cores_for_rank(int ranks_on_node);

}  // namespace leap
