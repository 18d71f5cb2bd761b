// Role split (MPI_Comm_split by colour), node-local ranks (MPI_Comm_split_type SHARED) and GPU
// binding, computed identically on every rank from allgathered facts.
#include "mpi/topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>

#include "common/check.h"
#include "mpi/agree.h"
#include "mpi/placement.h"

namespace leap::mpi {

namespace {

constexpr int kCpus = 96;  // bytes of one rank's CPU list in the allgather

// This process's CPU affinity as a list ("0-7,16-23"), cut to fit kCpus; what the launcher's
// binding really gave the rank.
std::string affinity_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE;) {
    if (!CPU_ISSET(c, &set)) {
      ++c;
      continue;
    }
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += e > c ? fmt::format("{}-{}", c, e) : std::to_string(c);
    c = e + 1;
  }
  if (out.size() >= static_cast<size_t>(kCpus)) out = out.substr(0, kCpus - 4) + "...";
  return out;
}

}  // namespace

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

bool every_candidate_timed(const std::vector<RankInfo>& ranks, const std::string& in_process_device) {
  bool any_sandbox = false;
  for (const auto& r : ranks) {
    if (r.role != Role::kSandbox) continue;
    any_sandbox = true;
    if (r.device < 0) return false;
  }
  return any_sandbox || in_process_device == "gpu";
}

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

  // A node is the ranks that share memory, found by MPI, not a hostname: containers and some
  // clusters give every node the same name, and ranks grouped by it would be handed one node's
  // GPUs. The hostname is only shown.
  int leader = t.world_rank;
  MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, t.node_comm));
  constexpr int kHost = 64;
  char host[kHost] = {};
  gethostname(host, kHost - 1);
  std::vector<char> hosts(static_cast<size_t>(size) * kHost);
  std::vector<int> local_ranks(static_cast<size_t>(size)), local_sizes(static_cast<size_t>(size));
  std::vector<int> leaders(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(host, kHost, MPI_CHAR, hosts.data(), kHost, MPI_CHAR, t.world));
  MPI_CHECK(MPI_Allgather(&local_rank, 1, MPI_INT, local_ranks.data(), 1, MPI_INT, t.world));
  MPI_CHECK(MPI_Allgather(&local_size, 1, MPI_INT, local_sizes.data(), 1, MPI_INT, t.world));
  MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, t.world));

  PlacementInput in;
  in.node = node_indices(leaders);
  in.local_rank = local_ranks;
  in.local_size = local_sizes;
  in.gpus_per_node = gpus_per_node;
  in.policy_on_gpu = policy_on_gpu;
  in.config = cfg;
  std::vector<std::string> host_of;
  for (int r = 0; r < size; ++r) host_of.emplace_back(&hosts[static_cast<size_t>(r) * kHost]);
  // Every rank places all ranks from its own GPU count, which may differ between nodes (a CPU
  // node of sandbox ranks): a placement that fails on some ranks must stop every rank, not leave
  // the others waiting in the next collective.
  auto placed = place_ranks(in);
  const Status agreed = agree(placed.status(), t.world);
  if (!agreed) {
    free_topology(&t);
    return agreed;
  }
  std::vector<char> cpus(static_cast<size_t>(size) * kCpus);
  // A fixed-size, zero-padded field: the allgather reads kCpus bytes, more than the list holds.
  char mine[kCpus] = {};
  const std::string list = affinity_list();
  list.copy(mine, kCpus - 1);
  MPI_CHECK(MPI_Allgather(mine, kCpus, MPI_CHAR, cpus.data(), kCpus, MPI_CHAR, t.world));
  for (int r = 0; r < size; ++r) {
    const auto i = static_cast<size_t>(r);
    const Placement& p = (*placed)[i];
    RankInfo ri{r, host_of[i], in.node[i], local_ranks[i], p.role, p.role_rank, p.device, {}};
    ri.cpus = std::string(&cpus[static_cast<size_t>(r) * kCpus]);
    t.ranks.push_back(std::move(ri));
  }
  t.warnings = shared_gpu_warnings(in, *placed);
  for (auto& w : shared_hostname_warnings(in.node, host_of)) t.warnings.push_back(std::move(w));
  const auto& me = t.self();
  MPI_CHECK(MPI_Comm_split(t.world, static_cast<int>(me.role), me.role_rank, &t.role_comm));
  return t;
}

std::vector<int> node_indices(const std::vector<int>& leader) {
  std::vector<int> seen, node;
  for (int l : leader) {
    size_t idx = 0;
    while (idx < seen.size() && seen[idx] != l) ++idx;
    if (idx == seen.size()) seen.push_back(l);
    node.push_back(static_cast<int>(idx));
  }
  return node;
}

std::vector<std::string> shared_hostname_warnings(const std::vector<int>& node,
                                                  const std::vector<std::string>& host) {
  // Each node's name (that of its first rank), then the nodes of every name, in node order.
  std::vector<std::string> name_of;
  for (size_t r = 0; r < node.size(); ++r)
    if (static_cast<size_t>(node[r]) == name_of.size()) name_of.push_back(host[r]);
  std::vector<std::string> out;
  std::vector<bool> told(name_of.size(), false);
  for (size_t n = 0; n < name_of.size(); ++n) {
    if (told[n]) continue;
    std::vector<size_t> same;
    for (size_t m = n; m < name_of.size(); ++m)
      if (name_of[m] == name_of[n]) same.push_back(m);
    if (same.size() < 2) continue;
    for (size_t m : same) told[m] = true;
    out.push_back(
        fmt::format("nodes {} all call themselves '{}' (told apart by shared memory; the "
                    "layout table's host column names them alike)",
                    fmt::join(same, ", "), name_of[n]));
  }
  return out;
}

void free_topology(Topology* t) {
  for (MPI_Comm* c : {&t->role_comm, &t->node_comm, &t->world}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

std::string format_layout(const Topology& t) {
  std::string out = fmt::format("layout: {} ranks, {} policy, {} sandbox\n", t.ranks.size(),
                                t.count(Role::kPolicy), t.count(Role::kSandbox));
  out += fmt::format("  {:>5}  {:<20} {:>4} {:>5}  {:<8} {:>9}  {:<7} {}\n", "rank", "host", "node",
                     "local", "role", "role_rank", "device", "cpus");
  for (const auto& r : t.ranks) {
    out += fmt::format("  {:>5}  {:<20} {:>4} {:>5}  {:<8} {:>9}  {:<7} {}{}\n", r.world_rank,
                       r.host, r.node, r.local_rank, role_name(r.role), r.role_rank,
                       r.device < 0 ? "cpu" : "gpu" + std::to_string(r.device), r.cpus,
                       r.world_rank == 0 ? "  (coordinator)" : "");
  }
  return out;
}

}  // namespace leap::mpi
