// Role assignment, as a pure function: sandbox ranks at the end of the world or of each node,
// rank 0 always policy, impossible layouts rejected with a message that says how to fix them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "mpi/placement.h"
#include "mpi/topology.h"

namespace leap::mpi {
namespace {

TEST(Topology, LastRanksAreSandbox) {
  TopologyConfig cfg;
  cfg.sandbox_ranks = 2;
  auto roles = assign_roles(cfg, {0, 1, 2, 3}, {4, 4, 4, 4});
  ASSERT_TRUE(roles.has_value());
  EXPECT_EQ(*roles, (std::vector<Role>{Role::kPolicy, Role::kPolicy, Role::kSandbox, Role::kSandbox}));
}

// leap eval reports speed-ups only when every candidate is timed: every sandbox rank on a GPU,
// or rank 0 verifying in-process on one.
TEST(Topology, EveryCandidateTimed) {
  const auto rank = [](Role role, int device) {
    RankInfo r;
    r.role = role;
    r.device = device;
    return r;
  };
  EXPECT_TRUE(every_candidate_timed({rank(Role::kPolicy, 0), rank(Role::kSandbox, 1)}, "gpu"));
  // The policy's own device says nothing about a sandbox rank in the interpreter.
  EXPECT_FALSE(every_candidate_timed({rank(Role::kPolicy, 0), rank(Role::kSandbox, -1)}, "gpu"));
  EXPECT_FALSE(every_candidate_timed({rank(Role::kPolicy, 0), rank(Role::kSandbox, 1), rank(Role::kSandbox, -1)}, "gpu"));
  EXPECT_TRUE(every_candidate_timed({rank(Role::kPolicy, 0)}, "gpu"));  // in-process on a GPU
  EXPECT_FALSE(every_candidate_timed({rank(Role::kPolicy, -1)}, "cpu"));
}

TEST(Topology, PerNodeSandbox) {
  TopologyConfig cfg;
  cfg.sandbox_per_node = 1;
  // Two nodes of three ranks each.
  auto roles = assign_roles(cfg, {0, 1, 2, 0, 1, 2}, {3, 3, 3, 3, 3, 3});
  ASSERT_TRUE(roles.has_value());
  EXPECT_EQ(*roles, (std::vector<Role>{Role::kPolicy, Role::kPolicy, Role::kSandbox, Role::kPolicy,
                                       Role::kPolicy, Role::kSandbox}));
}

TEST(Topology, NoPolicyRankIsAnError) {
  TopologyConfig cfg;
  cfg.sandbox_ranks = 4;
  auto roles = assign_roles(cfg, {0, 1, 2, 3}, {4, 4, 4, 4});
  ASSERT_FALSE(roles.has_value());
  EXPECT_EQ(roles.status().exit_code(), 2);
  EXPECT_NE(roles.status().message().find("at most 3"), std::string::npos);
}

TEST(Topology, CoordinatorMustBePolicy) {
  TopologyConfig cfg;
  cfg.sandbox_per_node = 1;
  auto roles = assign_roles(cfg, {0, 0}, {1, 1});  // one rank per node: all would be sandbox
  ASSERT_FALSE(roles.has_value());
  EXPECT_NE(roles.status().message().find("coordinator"), std::string::npos);
}

TEST(Topology, NoSandboxRanksIsAllPolicy) {
  TopologyConfig cfg;
  auto roles = assign_roles(cfg, {0}, {1});
  ASSERT_TRUE(roles.has_value());
  EXPECT_EQ(*roles, std::vector<Role>{Role::kPolicy});
}

}  // namespace
}  // namespace leap::mpi

// ---- placement (place_ranks, what make_topology and `leap layout` use) -------------------------

namespace leap::mpi {
namespace {

PlacementInput job(int nodes, int ranks_per_node, int gpus, bool cuda_policy, int sandbox_per_node,
                   const std::string& sandbox_device) {
  PlacementInput in;
  for (int n = 0; n < nodes; ++n) {
    for (int r = 0; r < ranks_per_node; ++r) {
      in.node.push_back(n);
      in.local_rank.push_back(r);
      in.local_size.push_back(ranks_per_node);
    }
  }
  in.gpus_per_node = gpus;
  in.policy_on_gpu = cuda_policy;
  in.config.sandbox_per_node = sandbox_per_node;
  in.config.sandbox_device = sandbox_device;
  in.packages_per_node = 2;
  return in;
}

// Every rank that drives a GPU has one of its own on its node, as long as the node has enough.
TEST(Placement, EveryPolicyAndGpuSandboxRankHasItsOwnGpu) {
  for (int nodes : {1, 2}) {
    for (int sandbox : {0, 1, 2, 3, 4}) {
      SCOPED_TRACE(fmt::format("{} nodes x 8 GPUs, {} sandbox ranks per node", nodes, sandbox));
      PlacementInput in = job(nodes, 8, 8, true, sandbox, "auto");
      auto p = place_ranks(in);
      ASSERT_TRUE(p.has_value()) << p.status().message();
      for (int n = 0; n < nodes; ++n) {
        std::set<int> used;
        int sandbox_ranks = 0;
        for (size_t r = 0; r < p->size(); ++r) {
          if (in.node[r] != n) continue;
          const Placement& x = (*p)[r];
          sandbox_ranks += x.role == Role::kSandbox;
          ASSERT_GE(x.device, 0) << "rank " << r << " has no GPU";
          EXPECT_TRUE(used.insert(x.device).second) << "GPU " << x.device << " given twice";
        }
        EXPECT_EQ(sandbox_ranks, sandbox);
      }
    }
  }
}

TEST(Placement, SandboxRanksGetTheGpusAfterThePolicyOnes) {
  auto p = place_ranks(job(1, 8, 8, true, 2, "auto"));
  ASSERT_TRUE(p.has_value());
  std::vector<int> devices;
  for (const auto& x : *p) devices.push_back(x.device);
  EXPECT_EQ(devices, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*p)[6].role, Role::kSandbox);
  // Ranks sit on the package of their GPU: the first half on package 0.
  EXPECT_EQ((*p)[3].package, 0);
  EXPECT_EQ((*p)[4].package, 1);
}

TEST(Placement, MoreRanksThanGpus) {
  // 10 ranks on 8 GPUs, 3 of them sandbox: 7 policy ranks, then one sandbox rank with a GPU of
  // its own; with auto the other two verify in the PTX interpreter.
  auto p = place_ranks(job(1, 10, 8, true, 3, "auto"));
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_EQ((*p)[7].device, 7);
  EXPECT_EQ((*p)[8].device, -1);
  EXPECT_EQ((*p)[9].device, -1);
  // With gpu they share the GPUs round-robin instead.
  auto shared = place_ranks(job(1, 10, 8, true, 3, "gpu"));
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ((*shared)[8].device, 0);
  EXPECT_EQ((*shared)[9].device, 1);
  // 10 cuda policy ranks on 8 GPUs cannot run: NCCL needs one GPU each.
  auto too_many = place_ranks(job(1, 10, 8, true, 0, "auto"));
  ASSERT_FALSE(too_many.has_value());
  EXPECT_EQ(too_many.status().exit_code(), 2);
  EXPECT_NE(too_many.status().message().find("one GPU per policy rank"), std::string::npos);
}

// Sandbox timing beside a cuda policy rank on one GPU is named, whether sandbox ranks share the
// GPUs round-robin or rank 0 verifies in-process; GPUs of its own, or the CPU, are not.
TEST(Placement, SharedGpusAreNamed) {
  const auto warnings = [](const PlacementInput& in) {
    auto p = place_ranks(in);
    EXPECT_TRUE(p.has_value()) << p.status().message();
    return p ? shared_gpu_warnings(in, *p) : std::vector<std::string>{};
  };
  const auto shared = warnings(job(1, 10, 8, true, 3, "gpu"));  // sandbox ranks 8 and 9 on GPUs 0 and 1
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_NE(shared[0].find("sandbox rank 8 times kernels on GPU 0 of node 0, which policy rank 0 trains on"),
            std::string::npos)
      << shared[0];
  EXPECT_NE(shared[1].find("sandbox rank 9 times kernels on GPU 1"), std::string::npos) << shared[1];
  const auto in_process = warnings(job(1, 2, 8, true, 0, "auto"));
  ASSERT_EQ(in_process.size(), 1u);
  EXPECT_NE(in_process[0].find("no sandbox rank: rank 0 verifies in-process on GPU 0"), std::string::npos);
  EXPECT_TRUE(warnings(job(1, 2, 8, true, 0, "cpu")).empty());
  EXPECT_TRUE(warnings(job(1, 10, 8, true, 3, "auto")).empty());  // a spare GPU, then the interpreter
  EXPECT_TRUE(warnings(job(1, 8, 8, true, 2, "gpu")).empty());    // GPUs 6 and 7 of their own
  EXPECT_TRUE(warnings(job(1, 4, 2, false, 2, "gpu")).empty());   // a CPU policy
}

TEST(Placement, CpuPolicyLeavesTheGpusToTheSandbox) {
  auto p = place_ranks(job(1, 4, 2, false, 2, "auto"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].device, -1);
  EXPECT_EQ((*p)[2].device, 0);
  EXPECT_EQ((*p)[3].device, 1);
  auto cpu = place_ranks(job(1, 4, 2, false, 2, "cpu"));
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ((*cpu)[3].device, -1);
  auto none = place_ranks(job(1, 4, 0, false, 2, "gpu"));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("sandbox.device = gpu"), std::string::npos);
}

TEST(Placement, JsonNamesEveryRank) {
  PlacementInput in = job(2, 8, 8, true, 2, "auto");
  auto p = place_ranks(in);
  ASSERT_TRUE(p.has_value());
  auto j = nlohmann::json::parse(format_placement_json(in, *p));
  ASSERT_EQ(j["ranks"].size(), 16u);
  EXPECT_EQ(j["ranks"][15]["node"], 1);
  EXPECT_EQ(j["ranks"][15]["role"], "sandbox");
  EXPECT_EQ(j["ranks"][15]["gpu"], 7);
  EXPECT_EQ(j["ranks"][15]["local_rank"], 7);
}

// A node is the ranks that share memory, numbered by its first rank; the hostname does not
// decide it. Two nodes of one name (containers) stay two nodes, each with its own GPUs, and the
// layout says that they look alike.
TEST(Topology, NodesComeFromSharedMemoryNotHostnames) {
  // Ranks 0,1 and 4 on the node led by rank 0; 2,3 on the node led by 2; 5 alone.
  EXPECT_EQ(node_indices({0, 0, 2, 2, 0, 5}), (std::vector<int>{0, 0, 1, 1, 0, 2}));
  EXPECT_EQ(node_indices({}), std::vector<int>{});
  const std::vector<int> node = {0, 0, 1, 1, 0, 2};
  const auto same = shared_hostname_warnings(node, {"c", "c", "c", "c", "c", "d"});
  ASSERT_EQ(same.size(), 1u);
  EXPECT_NE(same[0].find("nodes 0, 1 all"), std::string::npos) << same[0];
  EXPECT_NE(same[0].find("'c'"), std::string::npos) << same[0];
  EXPECT_TRUE(shared_hostname_warnings(node, {"a", "a", "b", "b", "a", "d"}).empty());
  // One line per repeated name, however many nodes share it.
  const auto three = shared_hostname_warnings({0, 1, 2, 3}, {"x", "x", "y", "x"});
  ASSERT_EQ(three.size(), 1u);
  EXPECT_NE(three[0].find("nodes 0, 1, 3 all call themselves 'x'"), std::string::npos) << three[0];

  // Placed by node index, the two same-named nodes each give out their GPUs from 0.
  PlacementInput in;
  in.node = node_indices({0, 0, 2, 2});
  in.local_rank = {0, 1, 0, 1};
  in.local_size = {2, 2, 2, 2};
  in.gpus_per_node = 2;
  in.policy_on_gpu = true;
  in.config.sandbox_ranks = 0;
  auto p = place_ranks(in);
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_EQ((*p)[2].device, 0);
  EXPECT_EQ((*p)[3].device, 1);
}

}  // namespace
}  // namespace leap::mpi
