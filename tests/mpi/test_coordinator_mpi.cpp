// The distributed step under mpirun -np 4 (2 policy + 2 sandbox ranks) with small engines whose
// behaviour is known: completions succeed or fail by their seed, the verifier judges by text,
// and training sums advantages into the parameters. Checks: the step runs end to end; the DCP
// label of every group in the HDF5 rows equals the rule's, recomputed here from the group's turn-1
// verdicts, and only expanded groups' failed samples got more turns; a SANDBOX_ERROR is retried;
// replicas stay identical; the HDF5 rows are written; and a 1-rank run (sandbox in-process) gives
// the same rows as the 4-rank run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "model/byte_tokenizer.h"
#include "mpi/coordinator.h"
#include "io/trajectory_reader.h"
#include "mpi/grad_reduce.h"
#include "fake_engines.h"

namespace leap::mpi {
namespace {

using sandbox::Verdict;
using testing_fakes::FakePolicy;
using testing_fakes::FakeVerifier;
using testing_fakes::rl_config;

// The DCP rule of src/rl/dcp.h restated for static mode with easy_below 0.5 and hopeless_at 1.0,
// from a group's turn-1 verdicts: a void sample (sandbox error) counts neither way.
io::DcpClass rule_label(const std::vector<Verdict>& turn1) {
  int valid = 0, failed = 0;
  for (Verdict v : turn1) {
    if (v == Verdict::kSandboxError) continue;
    ++valid;
    if (v != Verdict::kOk) ++failed;
  }
  if (valid == 0) return io::DcpClass::kNone;
  if (failed == 0) return io::DcpClass::kEasy;
  if (failed == valid) return io::DcpClass::kHopeless;  // failed >= 1.0 * valid
  if (2 * failed < valid) return io::DcpClass::kEasy;   // failed < 0.5 * valid
  return io::DcpClass::kExpanded;
}

// Checks every group of the file: its stored label is the rule's, and a sample has turns after
// the first exactly when its group was expanded and its turn 1 was a valid failure. Returns how
// many groups got each label, so the caller can see that the run exercised them.
std::map<io::DcpClass, int> check_dcp_rows(const std::string& h5) {
  std::map<io::DcpClass, int> labels;
  auto run = io::read_trajectory_run(h5);
  EXPECT_TRUE(run.has_value()) << run.status().message();
  if (!run.has_value()) return labels;
  using GroupKey = std::pair<int64_t, int32_t>;  // (step, group)
  std::map<GroupKey, std::map<int32_t, Verdict>> turn1;  // sample -> its turn-1 verdict
  std::map<GroupKey, std::map<int32_t, int>> turns;      // sample -> its number of turns
  std::map<GroupKey, std::set<io::DcpClass>> stored;
  for (const auto& row : run->samples) {
    GroupKey key{row.step, row.group};
    if (row.turn == 1) turn1[key][row.sample] = static_cast<Verdict>(row.verdict);
    ++turns[key][row.sample];
    stored[key].insert(row.dcp);
  }
  EXPECT_EQ(turn1.size(), 3u * 4u);  // 3 steps of 4 groups
  for (const auto& [key, samples] : turn1) {
    std::vector<Verdict> verdicts;
    for (const auto& [s, v] : samples) verdicts.push_back(v);
    EXPECT_EQ(verdicts.size(), 6u);  // group_size
    io::DcpClass want = rule_label(verdicts);
    ++labels[want];
    EXPECT_EQ(stored[key].size(), 1u) << "step " << key.first << " group " << key.second;
    if (stored[key].size() != 1u) continue;
    EXPECT_EQ(static_cast<int>(*stored[key].begin()), static_cast<int>(want))
        << "step " << key.first << " group " << key.second;
    for (const auto& [s, v] : samples) {
      bool valid_failure = v != Verdict::kOk && v != Verdict::kSandboxError;
      bool more_turns = turns[key][s] > 1;
      EXPECT_EQ(more_turns, want == io::DcpClass::kExpanded && valid_failure)
          << "step " << key.first << " group " << key.second << " sample " << s;
    }
  }
  return labels;
}

TEST(CoordinatorMpi, StepsAcrossFourRanksMatchOneRank) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  ASSERT_EQ(world_size, 4);
  auto suite = testing_fakes::fake_suite();
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  auto rl = rl_config();
  rl.rl.pipeline = "sync";  // test_stream_pipeline_mpi compares the streaming one with this
  // rule_label() restates the rule for these options.
  ASSERT_EQ(rl.dcp.mode, "static");
  ASSERT_DOUBLE_EQ(rl.dcp.easy_below, 0.5);
  ASSERT_DOUBLE_EQ(rl.dcp.hopeless_at, 1.0);
  Logger log(world_rank, false, LogLevel::kWarn);
  CoordinatorOptions co;
  co.batch_tasks = 4;
  co.check_replicas_every = 1;

  TopologyConfig tc;
  tc.sandbox_ranks = 2;
  auto topo = make_topology(MPI_COMM_WORLD, tc, 0, false);
  ASSERT_TRUE(topo.has_value());
  FakePolicy policy;
  FakeVerifier verifier;
  std::vector<io::StepRow> rows4;
  std::string h5 = std::string(LEAP_BINARY_DIR) + "/coordinator_test.h5";
  if (topo->is_coordinator()) {
    std::filesystem::remove(h5);
    auto out = io::TrajectoryFile::create(h5, {"[rl]\n", "0", "x", "fp", {"L1/copy", "L1/cop2"}}, io::SwmrMode::kOff);
    ASSERT_TRUE(out.has_value());
    auto format = rl::make_prompt_format("plain", "", policy.tok_, {}, rl::MultiTurn::kAppend, 0);
    ASSERT_TRUE(format.has_value());
    Coordinator coord(*topo, *suite, rl, co, 77, policy, *format, nullptr, log);
    for (int step = 0; step < 3; ++step) {
      auto rep = coord.run_step(step, out->get());
      ASSERT_TRUE(rep.has_value()) << rep.status().message();
      rows4.push_back(rep->row);
    }
    coord.stop();
    EXPECT_EQ((*out)->steps_written(), 3);
  } else if (topo->self().role == Role::kPolicy) {
    ASSERT_TRUE(serve_policy(*topo, policy).is_ok());
  } else {
    ASSERT_TRUE(serve_sandbox(*topo, verifier).is_ok());
  }
  // Both policy replicas took the same updates.
  float p0[2] = {policy.params_[0], policy.params_[1]};
  if (topo->self().role == Role::kPolicy) {
    ASSERT_TRUE(check_replicas_identical(p0, 2, topo->role_comm).is_ok());
  }
  free_topology(&*topo);

  // The file is closed: every group's DCP label against the rule. The FakePolicy's odds give
  // groups of each kind; each must occur, or the check above proved nothing about it.
  if (world_rank == 0) {
    auto labels = check_dcp_rows(h5);
    EXPECT_GT(labels[io::DcpClass::kEasy], 0);
    EXPECT_GT(labels[io::DcpClass::kHopeless], 0);
    EXPECT_GT(labels[io::DcpClass::kExpanded], 0);
  }

  // The same three steps on rank 0 alone, sandbox in-process.
  if (world_rank == 0) {
    TopologyConfig solo;
    auto t1 = make_topology(MPI_COMM_SELF, solo, 0, false);
    ASSERT_TRUE(t1.has_value());
    FakePolicy p1;
    FakeVerifier v1;
    auto f1 = rl::make_prompt_format("plain", "", p1.tok_, {}, rl::MultiTurn::kAppend, 0);
    ASSERT_TRUE(f1.has_value());
    Coordinator c1(*t1, *suite, rl, co, 77, p1, *f1, &v1, log);
    int64_t void_samples = 0, samples = 0;
    for (int step = 0; step < 3; ++step) {
      auto rep = c1.run_step(step, nullptr);
      ASSERT_TRUE(rep.has_value()) << rep.status().message();
      void_samples += rep->void_samples;  // the FakePolicy's "flaky" answers stay SANDBOX_ERROR
      samples += rep->samples;
      const io::StepRow& a = rows4[static_cast<size_t>(step)];
      const io::StepRow& b = rep->row;
      EXPECT_EQ(a.n_samples, b.n_samples) << step;
      EXPECT_EQ(a.n_easy, b.n_easy);
      EXPECT_EQ(a.n_hopeless, b.n_hopeless);
      EXPECT_EQ(a.n_expanded, b.n_expanded);
      EXPECT_EQ(a.n_sandbox_jobs, b.n_sandbox_jobs);
      EXPECT_DOUBLE_EQ(a.pass_turn1, b.pass_turn1);
      EXPECT_DOUBLE_EQ(a.pass_final, b.pass_final);
      EXPECT_EQ(a.tokens_generated, b.tokens_generated);
    }
    c1.stop();  // no other ranks: a broadcast to itself
    int64_t jobs = 0;
    for (const auto& r : rows4) jobs += r.n_sandbox_jobs;
    EXPECT_GT(v1.verified_, jobs);  // sandbox errors were verified again
    // The step report counts the void samples (the progress line warns above one in ten).
    EXPECT_GT(void_samples, 0);
    EXPECT_LT(void_samples, samples);
    EXPECT_EQ(samples, 3 * co.batch_tasks * rl.rl.group_size);
    EXPECT_EQ(p1.params_[0], p0[0]);  // the same update as the 2-replica run
    EXPECT_EQ(p1.params_[1], p0[1]);
    // Some groups were expanded and some pruned, so the run exercised DCP both ways.
    int expanded = 0, pruned = 0;
    for (const auto& r : rows4) expanded += r.n_expanded, pruned += r.n_easy + r.n_hopeless;
    EXPECT_GT(expanded, 0);
    EXPECT_GT(pruned, 0);
    free_topology(&*t1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace leap::mpi
