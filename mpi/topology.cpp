// Role split (MPI_Comm_split by colour), node-local ranks (MPI_Comm_split_type SHARED) and GPU
// binding, computed identically on every rank from allgathered facts.
#include "mpi/topology.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>

#include "common/check.h"

namespace leap::mpi {

void TopologyConfig::declare(OptionSet& opts) {
  opts.add("mpi.sandbox_ranks", &sandbox_ranks, 0,
           "Sandbox (verifier) ranks in total, taken from the end of MPI_COMM_WORLD. 0 runs the "
           "sandbox inside the coordinator (1-rank runs, tests).",
           {.min = 0});
  opts.add("mpi.sandbox_per_node", &sandbox_per_node, 0,
           "If > 0: the last N ranks of every node are sandbox ranks (overrides sandbox_ranks).",
           {.min = 0});
}

const char* role_name(Role r) { return r == Role::kPolicy ? "policy" : "sandbox"; }

std::vector<int> Topology::world_ranks_of(Role role) const {
  std::vector<int> out;
  for (const auto& r : ranks)
    if (r.role == role) out.push_back(r.world_rank);
  return out;
}

Expected<std::vector<Role>> assign_roles(const TopologyConfig& cfg, const std::vector<int>& local_rank,
                                         const std::vector<int>& local_size) {
  const int n = static_cast<int>(local_rank.size());
  std::vector<Role> roles(static_cast<size_t>(n), Role::kPolicy);
  if (cfg.sandbox_per_node > 0) {
    for (int r = 0; r < n; ++r)
      if (local_rank[r] >= local_size[r] - cfg.sandbox_per_node) roles[r] = Role::kSandbox;
  } else {
    if (cfg.sandbox_ranks >= n) {
      return invalid_input(fmt::format(
          "mpi.sandbox_ranks = {} leaves no policy rank among {} ranks: use at most {} sandbox ranks "
          "or start more ranks with mpirun -np", cfg.sandbox_ranks, n, n - 1));
    }
    for (int r = n - cfg.sandbox_ranks; r < n; ++r) roles[r] = Role::kSandbox;
  }
  if (roles[0] != Role::kPolicy) {
    return invalid_input(fmt::format(
        "mpi.sandbox_per_node = {} makes world rank 0 a sandbox rank, but rank 0 is the coordinator "
        "and must be a policy rank: lower mpi.sandbox_per_node or put more ranks on the first node",
        cfg.sandbox_per_node));
  }
  return roles;
}

Expected<Topology> make_topology(MPI_Comm world, const TopologyConfig& cfg, int gpus_per_node,
                                 bool policy_on_gpu) {
  Topology t;
  int size = 0;
  MPI_CHECK(MPI_Comm_dup(world, &t.world));
  MPI_CHECK(MPI_Comm_rank(t.world, &t.world_rank));
  MPI_CHECK(MPI_Comm_size(t.world, &size));
  MPI_CHECK(MPI_Comm_split_type(t.world, MPI_COMM_TYPE_SHARED, t.world_rank, MPI_INFO_NULL, &t.node_comm));
  int local_rank = 0, local_size = 0;
  MPI_CHECK(MPI_Comm_rank(t.node_comm, &local_rank));
  MPI_CHECK(MPI_Comm_size(t.node_comm, &local_size));

  constexpr int kHost = 64;
  char host[kHost] = {};
  gethostname(host, kHost - 1);
  std::vector<char> hosts(static_cast<size_t>(size) * kHost);
  std::vector<int> local_ranks(static_cast<size_t>(size)), local_sizes(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(host, kHost, MPI_CHAR, hosts.data(), kHost, MPI_CHAR, t.world));
  MPI_CHECK(MPI_Allgather(&local_rank, 1, MPI_INT, local_ranks.data(), 1, MPI_INT, t.world));
  MPI_CHECK(MPI_Allgather(&local_size, 1, MPI_INT, local_sizes.data(), 1, MPI_INT, t.world));

  auto roles = assign_roles(cfg, local_ranks, local_sizes);
  if (!roles) {
    free_topology(&t);
    return roles.status();
  }
  // Devices: policy ranks take a node's first GPUs in local order; sandbox ranks take the ones
  // after them (DESIGN.md: sandbox ranks may be given their own GPUs for clean timing).
  int policy_count = 0, sandbox_count = 0;
  std::vector<int> policy_on_node(static_cast<size_t>(size)), sandbox_on_node(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    t.ranks.push_back(RankInfo{r, std::string(&hosts[static_cast<size_t>(r) * kHost]), local_ranks[r],
                               (*roles)[r], 0, -1});
  }
  for (auto& ri : t.ranks) {
    int before_policy = 0, before_sandbox = 0;
    for (const auto& o : t.ranks) {
      if (o.host != ri.host || o.world_rank >= ri.world_rank) continue;
      (o.role == Role::kPolicy ? before_policy : before_sandbox)++;
    }
    int policy_here = 0;
    for (const auto& o : t.ranks) policy_here += (o.host == ri.host && o.role == Role::kPolicy);
    if (ri.role == Role::kPolicy) {
      ri.role_rank = policy_count++;
      if (policy_on_gpu && gpus_per_node > 0) ri.device = before_policy % gpus_per_node;
    } else {
      ri.role_rank = sandbox_count++;
      int slot = (policy_on_gpu ? policy_here : 0) + before_sandbox;
      bool want = cfg.sandbox_device == "gpu" || (cfg.sandbox_device == "auto" && slot < gpus_per_node);
      if (want && gpus_per_node > 0) ri.device = slot % gpus_per_node;
    }
  }
  if (cfg.sandbox_device == "gpu" && gpus_per_node == 0 && sandbox_count > 0) {
    free_topology(&t);
    return invalid_input("sandbox.device = gpu but this node has no GPU: use auto or cpu");
  }
  if (policy_on_gpu && gpus_per_node == 0) {
    free_topology(&t);
    return invalid_input("backend.name = cuda but no GPU is visible on this node: use backend.name = cpu");
  }
  const auto& me = t.self();
  MPI_CHECK(MPI_Comm_split(t.world, static_cast<int>(me.role), me.role_rank, &t.role_comm));
  return t;
}

void free_topology(Topology* t) {
  for (MPI_Comm* c : {&t->role_comm, &t->node_comm, &t->world}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

std::string format_layout(const Topology& t) {
  std::string out = fmt::format("layout: {} ranks, {} policy, {} sandbox\n", t.ranks.size(),
                                t.count(Role::kPolicy), t.count(Role::kSandbox));
  out += fmt::format("  {:>5}  {:<20} {:>5}  {:<8} {:>9}  {}\n", "rank", "host", "local", "role", "role_rank",
                     "device");
  for (const auto& r : t.ranks) {
    out += fmt::format("  {:>5}  {:<20} {:>5}  {:<8} {:>9}  {}{}\n", r.world_rank, r.host, r.local_rank,
                       role_name(r.role), r.role_rank, r.device < 0 ? "cpu" : "gpu" + std::to_string(r.device),
                       r.world_rank == 0 ? "  (coordinator)" : "");
  }
  return out;
}

}  // namespace leap::mpi
