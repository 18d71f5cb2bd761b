// place_ranks and its table and JSON (see placement.h).
#include "mpi/placement.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace leap::mpi {

Expected<std::vector<Placement>> place_ranks(const PlacementInput& in) {
  const size_t n = in.node.size();
  LEAP_ASSIGN_OR_RETURN(std::vector<Role> roles,
                        assign_roles(in.config, in.local_rank, in.local_size));
  const std::string& sdev = in.config.sandbox_device;
  std::vector<Placement> out(n);
  int policy_count = 0, sandbox_count = 0;
  for (size_t r = 0; r < n; ++r) {
    Placement& p = out[r];
    p.role = roles[r];
    int before_policy = 0, before_sandbox = 0, policy_here = 0, sandbox_here = 0;
    for (size_t o = 0; o < n; ++o) {
      if (in.node[o] != in.node[r]) continue;
      (roles[o] == Role::kPolicy ? policy_here : sandbox_here)++;
      if (o < r) (roles[o] == Role::kPolicy ? before_policy : before_sandbox)++;
    }
    if (p.role == Role::kPolicy) {
      p.role_rank = policy_count++;
      if (in.policy_on_gpu) {
        if (in.gpus_per_node == 0)
          return invalid_input(
              "backend.name = cuda but the nodes have no GPU: use backend.name = cpu");
        if (policy_here > in.gpus_per_node)
          return invalid_input(fmt::format(
              "backend.name = cuda puts {} policy ranks on node {} with {} GPU(s); NCCL needs one "
              "GPU per policy rank: start fewer ranks per node or set mpi.sandbox_per_node so the "
              "rest verify",
              policy_here, in.node[r], in.gpus_per_node));
        p.device = before_policy;
      }
    } else {
      p.role_rank = sandbox_count++;
      const int slot = (in.policy_on_gpu ? policy_here : 0) + before_sandbox;
      if (sdev == "gpu") {
        if (in.gpus_per_node == 0)
          return invalid_input("sandbox.device = gpu but the nodes have no GPU: use auto or cpu");
        p.device = slot % in.gpus_per_node;
      } else if (sdev == "auto" && slot < in.gpus_per_node) {
        p.device = slot;
      }
    }
    const int per_node = in.local_size[r];
    if (in.packages_per_node > 0 && per_node % in.packages_per_node == 0)
      p.package = in.local_rank[r] / (per_node / in.packages_per_node);
  }
  return out;
}

std::vector<std::string> shared_gpu_warnings(const PlacementInput& in, const std::vector<Placement>& p) {
  std::vector<std::string> out;
  if (!in.policy_on_gpu) return out;
  bool any_sandbox = false;
  for (size_t s = 0; s < p.size(); ++s) {
    if (p[s].role != Role::kSandbox) continue;
    any_sandbox = true;
    if (p[s].device < 0) continue;
    for (size_t r = 0; r < p.size(); ++r)
      if (p[r].role == Role::kPolicy && in.node[r] == in.node[s] && p[r].device == p[s].device)
        out.push_back(fmt::format(
            "sandbox rank {} times kernels on GPU {} of node {}, which policy rank {} trains on: its timings (and "
            "the speed-up rewards) are skewed by the policy's work, and both hold memory there; give the sandbox "
            "GPUs of its own (sandbox.device = auto leaves it the spare ones, then the PTX interpreter)",
            s, p[s].device, in.node[s], r));
  }
  if (!any_sandbox && in.gpus_per_node > 0 && in.config.sandbox_device != "cpu")
    out.push_back(
        fmt::format("no sandbox rank: rank 0 verifies in-process on GPU {}, which it also trains on: its timings (and the "
        "speed-up rewards) are skewed by the policy's work; start sandbox ranks (mpi.sandbox_ranks, with GPUs "
        "of their own) or set sandbox.device = cpu", p.empty() ? 0 : p[0].device));
  return out;
}

namespace {

std::string gpu_text(const Placement& p) {
  return p.device < 0 ? (p.role == Role::kSandbox ? "none (PTX interpreter)" : "none (CPU)")
                      : "gpu" + std::to_string(p.device);
}

std::string cpu_text(const PlacementInput& in, const Placement& p) {
  std::string where = p.package < 0 ? "node" : fmt::format("package {}", p.package);
  return in.cpus_per_rank > 0 ? fmt::format("{} cores on {}", in.cpus_per_rank, where) : where;
}

}  // namespace

std::string format_placement_table(const PlacementInput& in, const std::vector<Placement>& p) {
  int policy = 0;
  for (const auto& x : p) policy += x.role == Role::kPolicy;
  std::string out = fmt::format("layout: {} ranks, {} policy, {} sandbox\n", p.size(), policy,
                                static_cast<int>(p.size()) - policy);
  out += fmt::format("  {:>5}  {:>4} {:>5}  {:<8} {:>9}  {:<22} {}\n", "rank", "node", "local",
                     "role", "role_rank", "gpu", "cpus");
  for (size_t r = 0; r < p.size(); ++r) {
    out += fmt::format("  {:>5}  {:>4} {:>5}  {:<8} {:>9}  {:<22} {}{}\n", r, in.node[r],
                       in.local_rank[r], role_name(p[r].role), p[r].role_rank, gpu_text(p[r]),
                       cpu_text(in, p[r]), r == 0 ? "  (coordinator)" : "");
  }
  return out;
}

std::string format_placement_json(const PlacementInput& in, const std::vector<Placement>& p) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < p.size(); ++r) {
    ranks.push_back({{"rank", r},
                     {"node", in.node[r]},
                     {"local_rank", in.local_rank[r]},
                     {"role", role_name(p[r].role)},
                     {"role_rank", p[r].role_rank},
                     {"gpu", p[r].device < 0 ? nlohmann::json(nullptr) : nlohmann::json(p[r].device)},
                     {"package", p[r].package < 0 ? nlohmann::json(nullptr)
                                                  : nlohmann::json(p[r].package)},
                     {"cpus", in.cpus_per_rank > 0 ? nlohmann::json(in.cpus_per_rank)
                                                   : nlohmann::json(nullptr)}});
  }
  nlohmann::json out = {{"ranks", ranks},
                        {"gpus_per_node", in.gpus_per_node},
                        {"policy_on_gpu", in.policy_on_gpu},
                        {"sandbox_device", in.config.sandbox_device}};
  return out.dump(2) + "\n";
}

}  // namespace leap::mpi
