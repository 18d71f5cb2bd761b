// The MPI layout: which ranks are policy (rollout/trainer, world rank 0 among them, also the
// coordinator) and which are sandbox (verifiers), which node each sits on, and which GPU each
// one drives. Every rank computes the same layout from the same allgathered facts, so a layout
// that cannot work fails on every rank with the same message, and nobody waits in a collective.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace leap::mpi {

struct TopologyConfig {
  int sandbox_ranks = 0;     // total sandbox ranks: the last ones of MPI_COMM_WORLD
  int sandbox_per_node = 0;  // if > 0: the last this-many ranks of every node, instead
  // auto|cpu|gpu: do sandbox ranks get their own GPUs? Set from `sandbox.device`, not declared here.
  std::string sandbox_device = "auto";
  void declare(OptionSet& opts);
};

enum class Role { kPolicy = 0, kSandbox = 1 };
const char* role_name(Role r);

struct RankInfo {
  int world_rank = 0;
  std::string host;
  int node = 0;  // index of its node: the ranks that share memory, in order of their first rank
  int local_rank = 0;  // within the node
  Role role = Role::kPolicy;
  int role_rank = 0;   // within the role's communicator
  int device = -1;     // GPU ordinal on its node, -1 for the CPU
  std::string cpus;    // the CPUs the launcher bound it to ("0-7"), as the rank itself sees
};

struct Topology {
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm role_comm = MPI_COMM_NULL;  // policy or sandbox, by this rank's role
  MPI_Comm node_comm = MPI_COMM_NULL;  // ranks sharing this node's memory
  std::vector<RankInfo> ranks;         // every rank, in world order
  int world_rank = 0;
  std::vector<std::string> warnings;   // the placement's (shared_gpu_warnings), for rank 0 to log

  const RankInfo& self() const { return ranks[static_cast<size_t>(world_rank)]; }
  bool is_coordinator() const { return world_rank == 0; }
  std::vector<int> world_ranks_of(Role role) const;
  int count(Role role) const { return static_cast<int>(world_ranks_of(role).size()); }
};

// Whether every candidate of the job is timed: each sandbox rank has a GPU (one without verifies
// in the PTX interpreter, untimed), or, with no sandbox rank, rank 0 verifies in-process on
// `in_process_device` = gpu. A layout that times only some would make speed-up metrics (fast_p)
// depend on which rank judged which task.
bool every_candidate_timed(const std::vector<RankInfo>& ranks, const std::string& in_process_device);

// Splits `world` into policy and sandbox groups and gives each rank its GPU by place_ranks
// (placement.h). `gpus_per_node` is what this node sees (0 on CPU-only machines);
// `policy_on_gpu` binds one GPU per policy rank when the backend is cuda; cfg.sandbox_device is
// the requested auto|cpu|gpu. Collective over `world`.
Expected<Topology> make_topology(MPI_Comm world, const TopologyConfig& cfg, int gpus_per_node,
                                 bool policy_on_gpu);
void free_topology(Topology* t);

// Node index of every rank, given the world rank of its node's first rank (the leader of its
// MPI_COMM_TYPE_SHARED communicator): nodes numbered in order of their leaders. Pure, for tests.
std::vector<int> node_indices(const std::vector<int>& leader);

// One warning per hostname that several nodes report (containers often give every node one name),
// listing those nodes: they are told apart by shared memory, not by name, but the layout table
// names them alike. `node` numbers nodes in order of their first rank, as node_indices does.
std::vector<std::string> shared_hostname_warnings(const std::vector<int>& node,
                                                  const std::vector<std::string>& host);

// The role assignment alone, given each rank's node-local rank and node size; pure, for tests.
Expected<std::vector<Role>> assign_roles(const TopologyConfig& cfg, const std::vector<int>& local_rank,
                                         const std::vector<int>& local_size);

// The table rank 0 prints at start: rank, host, node, local rank, role, role rank, device, CPUs.
std::string format_layout(const Topology& t);

}  // namespace leap::mpi
