// Role assignment, as a pure function: sandbox ranks at the end of the world or of each node,
// rank 0 always policy, impossible layouts rejected with a message that says how to fix them.
#include <gtest/gtest.h>

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
