// Where every rank goes: its role, the GPU it drives and the CPU package it is bound to. A pure
// function of the launch's shape, used by make_topology at start-up (so the layout a run
// prints is the one it runs) and by `leap layout`, which prints it before a job is queued.
//
// The rules (docs/design.md, Placement):
//  - roles: assign_roles (the last ranks of the world, or of every node, verify);
//  - GPUs, per node: policy ranks take the first GPUs in local order when the backend is cuda;
//    sandbox ranks take the ones after. sandbox.device = auto gives a sandbox rank a GPU of its
//    own while there is one left, and the PTX interpreter (no GPU) after that; gpu gives every
//    sandbox rank a GPU, sharing them round-robin once they run out; cpu gives none;
//  - CPUs: with R ranks per node on S packages (R divisible by S), local rank l sits on package
//    l / (R / S), which the jobscripts' `--map-by ppr:R/S:package` (mpirun) and
//    `-m block:block` (srun) produce; GPUs are numbered by package on such nodes, so a rank and
//    its GPU share a package.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "mpi/topology.h"

namespace leap::mpi {

struct PlacementInput {
  std::vector<int> node;        // node index of each world rank
  std::vector<int> local_rank;  // within its node
  std::vector<int> local_size;  // ranks on its node
  int gpus_per_node = 0;
  bool policy_on_gpu = false;   // backend.name = cuda
  TopologyConfig config;        // sandbox_ranks / sandbox_per_node, sandbox_device auto|cpu|gpu
  int packages_per_node = 0;    // 0: unknown (no package shown)
  int cpus_per_rank = 0;        // 0: unknown
};

struct Placement {
  Role role = Role::kPolicy;
  int role_rank = 0;
  int device = -1;   // GPU ordinal on its node; -1: none (CPU backend, PTX interpreter)
  int package = -1;  // CPU package (socket) it is bound to; -1: unknown
};

// invalid_input (exit 2) for a layout that cannot run: no policy rank, rank 0 not policy, two
// cuda policy ranks on one GPU, sandbox.device = gpu or backend cuda without GPUs.
Expected<std::vector<Placement>> place_ranks(const PlacementInput& in);

// Where sandbox timing would share a GPU with a cuda policy rank (sandbox.device = gpu sharing
// round-robin, or no sandbox rank, so that rank 0 verifies in-process on its own GPU): one line
// each, for a warning. The policy decodes and trains on that GPU while the workers time kernels
// there (skewed speed-ups, hence rewards) and both hold memory on it.
std::vector<std::string> shared_gpu_warnings(const PlacementInput& in, const std::vector<Placement>& p);

// `leap layout`'s table and JSON ({"ranks": [{"rank", "node", "local_rank", "role",
// "role_rank", "gpu", "package", "cpus"}], ...}).
std::string format_placement_table(const PlacementInput& in, const std::vector<Placement>& p);
std::string format_placement_json(const PlacementInput& in, const std::vector<Placement>& p);

}  // namespace leap::mpi
