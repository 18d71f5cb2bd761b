// The streaming pipeline (rl.pipeline = stream) under mpirun -np 4 (2 policy + 2 sandbox ranks)
// with the small engines of fake_engines.h, whose completions depend only on their seeds. Both
// pipelines must then make the same decisions: every HDF5 sample row (verdict, DCP class, reward,
// advantage, tokens) and every step's counters equal the synchronous pipeline's, the replicas
// take the same update, and a 1-rank streaming run (sandbox in-process) agrees too. Generation
// and verification are slowed, so groups really finish out of order and later turns start while
// other groups are still being verified, and finished groups are trained while others are still
// in the rollout (rl.overlap_training). The time accounting of /steps adds up.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "fake_engines.h"
#include "io/trajectory_reader.h"
#include "mpi/coordinator.h"

namespace leap::mpi {
namespace {

using testing_fakes::FakePolicy;
using testing_fakes::FakeVerifier;

struct RunResult {
  std::vector<io::StepRow> steps;
  float params[2] = {0, 0};
};

// Three steps on `topo` with the given pipeline; rank 0 writes `h5` (when not empty).
RunResult run(const Topology& topo, const tasks::Suite& suite, const std::string& pipeline, const std::string& h5,
              FakeVerifier* local_verifier, rl::RlSections rl = testing_fakes::rl_config()) {
  rl.rl.pipeline = pipeline;
  Logger log(0, false, LogLevel::kWarn);
  CoordinatorOptions co;
  co.batch_tasks = 4;
  FakePolicy policy;
  policy.delay_ms = 2;
  FakeVerifier verifier;
  verifier.delay_ms = 5;
  RunResult out;
  if (topo.is_coordinator()) {
    std::unique_ptr<io::TrajectoryFile> file;
    if (!h5.empty()) {
      std::filesystem::remove(h5);
      auto f = io::TrajectoryFile::create(h5, {"[rl]\n", "0", "x", "fp", {"L1/copy", "L1/cop2"}}, io::SwmrMode::kOff);
      EXPECT_TRUE(f.has_value());
      if (f.has_value()) file = std::move(*f);
    }
    auto format = rl::make_prompt_format("plain", "", policy.tok_, {}, rl::MultiTurn::kAppend, 0);
    EXPECT_TRUE(format.has_value());
    Coordinator coord(topo, suite, rl, co, 77, policy, *format, local_verifier, log);
    for (int step = 0; step < 3; ++step) {
      auto rep = coord.run_step(step, file.get());
      EXPECT_TRUE(rep.has_value()) << rep.status().message();
      if (rep.has_value()) out.steps.push_back(rep->row);
    }
    coord.stop();
    if (file) {
      EXPECT_TRUE(file->close().is_ok());
    }
  } else if (topo.self().role == Role::kPolicy) {
    EXPECT_TRUE(serve_policy(topo, policy).is_ok());
  } else {
    EXPECT_TRUE(serve_sandbox(topo, verifier).is_ok());
  }
  out.params[0] = policy.params_[0];
  out.params[1] = policy.params_[1];
  return out;
}

// The layout of these tests: ranks 0 and 1 generate, 2 and 3 verify.
Expected<Topology> two_policy_two_sandbox() {
  TopologyConfig tc;
  tc.sandbox_ranks = 2;
  return make_topology(MPI_COMM_WORLD, tc, 0, false);
}

void expect_same_decisions(const std::vector<io::StepRow>& a, const std::vector<io::StepRow>& b) {
  ASSERT_EQ(a.size(), b.size());
  bool some_loss = false;  // the comparison below says something
  for (size_t i = 0; i < a.size(); ++i) {
    some_loss |= a[i].loss != 0;
    EXPECT_EQ(a[i].n_samples, b[i].n_samples) << i;
    EXPECT_EQ(a[i].n_easy, b[i].n_easy) << i;
    EXPECT_EQ(a[i].n_hopeless, b[i].n_hopeless) << i;
    EXPECT_EQ(a[i].n_expanded, b[i].n_expanded) << i;
    EXPECT_EQ(a[i].n_sandbox_jobs, b[i].n_sandbox_jobs) << i;
    EXPECT_EQ(a[i].tokens_generated, b[i].tokens_generated) << i;
    EXPECT_DOUBLE_EQ(a[i].pass_turn1, b[i].pass_turn1) << i;
    EXPECT_DOUBLE_EQ(a[i].pass_final, b[i].pass_final) << i;
    // The fakes' loss is a sum over the sequences trained, whose order the pipelines differ in.
    EXPECT_NEAR(a[i].loss, b[i].loss, 1e-9 * (1 + std::abs(a[i].loss))) << i;
  }
  EXPECT_TRUE(some_loss);
}

TEST(StreamPipelineMpi, SameDecisionsAsSyncAndAccountedTime) {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  ASSERT_EQ(world_size, 4);
  auto suite = testing_fakes::fake_suite();
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  auto topo = two_policy_two_sandbox();
  ASSERT_TRUE(topo.has_value());
  const std::string dir = std::string(LEAP_BINARY_DIR);
  RunResult sync = run(*topo, *suite, "sync", dir + "/stream_test_sync.h5", nullptr);
  RunResult stream = run(*topo, *suite, "stream", dir + "/stream_test_stream.h5", nullptr);
  free_topology(&*topo);
  if (world_rank != 0) {
    if (topo->self().role == Role::kPolicy) {  // both replicas took the same updates either way
      EXPECT_EQ(sync.params[0], stream.params[0]);
      EXPECT_EQ(sync.params[1], stream.params[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  expect_same_decisions(sync.steps, stream.steps);
  EXPECT_EQ(sync.params[0], stream.params[0]);
  EXPECT_EQ(sync.params[1], stream.params[1]);

  // Row for row, the same samples with the same verdicts, classes, rewards and advantages.
  auto a = io::read_trajectory_run(dir + "/stream_test_sync.h5");
  auto b = io::read_trajectory_run(dir + "/stream_test_stream.h5");
  ASSERT_TRUE(a.has_value()) << a.status().message();
  ASSERT_TRUE(b.has_value()) << b.status().message();
  ASSERT_EQ(a->samples.size(), b->samples.size());
  int later_turns = 0;
  for (size_t i = 0; i < a->samples.size(); ++i) {
    const io::SampleRow& x = a->samples[i];
    const io::SampleRow& y = b->samples[i];
    EXPECT_EQ(x.step, y.step) << i;
    EXPECT_EQ(x.group, y.group) << i;
    EXPECT_EQ(x.sample, y.sample) << i;
    EXPECT_EQ(x.turn, y.turn) << i;
    EXPECT_EQ(x.verdict, y.verdict) << i;
    EXPECT_EQ(x.dcp, y.dcp) << i;
    EXPECT_EQ(x.reward, y.reward) << i;
    EXPECT_EQ(x.advantage, y.advantage) << i;
    EXPECT_EQ(x.completion_tokens, y.completion_tokens) << i;
    later_turns += x.turn > 1;
  }
  EXPECT_GT(later_turns, 0);  // DCP expanded some groups, so the later-turn path ran
  // sync sends every later turn back to the rank that generated the sample's previous turn (its
  // KV cache is there); turn 1 was spread over both policy ranks.
  std::map<std::tuple<int64_t, int32_t, int32_t, int32_t>, int32_t> rank_of;
  std::set<int32_t> turn1_ranks;
  for (const auto& x : a->samples) {
    rank_of[{x.step, x.group, x.sample, x.turn}] = x.mpi_rank;
    if (x.turn == 1) turn1_ranks.insert(x.mpi_rank);
  }
  EXPECT_EQ(turn1_ranks.size(), 2u);
  for (const auto& x : a->samples) {
    if (x.turn > 1) {
      EXPECT_EQ(x.mpi_rank, (rank_of[{x.step, x.group, x.sample, x.turn - 1}]));
    }
  }

  // The accounting: a policy rank's busy and waiting time fit in its share of the step; each
  // sandbox slot's busy or idle. The fakes sleep 2 ms per item generated and 5 ms per job, so
  // busy time is at least that.
  for (const auto* run_steps : {&sync.steps, &stream.steps}) {
    for (const auto& r : *run_steps) {
      EXPECT_GE(r.policy_busy_s, 0.002 * r.n_samples);
      EXPECT_GE(r.sandbox_busy_s, 0.005 * r.n_sandbox_jobs);
      EXPECT_GT(r.policy_wait_s, 0);  // the drain at least
      EXPECT_GE(r.policy_wait_s, r.policy_drain_s);
      // policy_idle_s is the remainder of 2 x time_s (clamped at 0), so what can fail is this:
      EXPECT_LE(r.policy_busy_s + r.policy_wait_s, 2 * r.time_s * 1.02 + 0.01);  // 2 policy ranks
      EXPECT_NEAR(r.sandbox_busy_s + r.sandbox_idle_s, 4 * r.time_s, 1e-6);  // 2 ranks x 2 slots
    }
  }
  // Streaming overlaps them: sandbox jobs went out while generation was still in flight, which
  // the synchronous pipeline never does.
  int overlapped = 0;
  for (const auto& r : stream.steps) overlapped += r.n_jobs_overlapped;
  EXPECT_GT(overlapped, 0);
  for (const auto& r : sync.steps) EXPECT_EQ(r.n_jobs_overlapped, 0);
  // And it trains groups whose last verdict is in while others are still generated or verified
  // (rl.overlap_training): the same sequences in all, some of them during the rollout.
  int64_t early = 0;
  for (size_t i = 0; i < stream.steps.size(); ++i) {
    early += stream.steps[i].train_sequences_early;
    EXPECT_EQ(stream.steps[i].train_sequences, sync.steps[i].train_sequences) << i;
    EXPECT_EQ(stream.steps[i].train_positions, sync.steps[i].train_positions) << i;
    EXPECT_EQ(sync.steps[i].train_sequences_early, 0) << i;
  }
  EXPECT_GT(early, 0);
  // Idle policy ranks started turn 2 before DCP decided (rl.speculative_turns): the decisions
  // kept some of those turns and dropped others, and the rows above are still the synchronous
  // pipeline's, so a kept turn is the one the decision would have started and a dropped one left
  // nothing behind.
  int speculative = 0, dropped = 0;
  for (const auto& r : stream.steps) {
    speculative += r.n_speculative;
    dropped += r.n_speculative_dropped;
    EXPECT_LE(r.n_speculative_dropped, r.n_speculative);
    EXPECT_EQ(r.speculative_dropped_tokens > 0, r.n_speculative_dropped > 0);
  }
  std::printf("speculative turns: %d, dropped %d\n", speculative, dropped);
  EXPECT_GT(speculative, dropped);
  EXPECT_GT(dropped, 0);
  for (const auto& r : sync.steps) EXPECT_EQ(r.n_speculative, 0);

  // Rank 0 alone, verifying in-process: the same decisions again.
  TopologyConfig solo;
  auto t1 = make_topology(MPI_COMM_SELF, solo, 0, false);
  ASSERT_TRUE(t1.has_value());
  FakeVerifier v1;
  v1.delay_ms = 5;  // as slow as the sandbox ranks above, so that rank 0 waits on it
  RunResult one = run(*t1, *suite, "stream", "", &v1);
  expect_same_decisions(sync.steps, one.steps);
  int speculative_one = 0;  // rank 0's own generator took speculative turns too
  for (const auto& r : one.steps) speculative_one += r.n_speculative;
  std::printf("one rank: speculative turns %d\n", speculative_one);
  EXPECT_GT(speculative_one, 0);
  EXPECT_EQ(one.params[0], sync.params[0]);
  free_topology(&*t1);
  MPI_Barrier(MPI_COMM_WORLD);
}

// The other shapes of a step, through both pipelines: dynamic sampling (a zero-variance group is
// replaced by a further round of the same step) and single-turn GRPO (max_turns = 1, no DCP
// expansion). The same decisions, rows and update either way.
TEST(StreamPipelineMpi, DynamicSamplingAndSingleTurnDecideAsSync) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  auto suite = testing_fakes::fake_suite();
  ASSERT_TRUE(suite.has_value()) << suite.status().message();
  auto topo = two_policy_two_sandbox();
  ASSERT_TRUE(topo.has_value());
  const std::string dir = std::string(LEAP_BINARY_DIR);
  for (const char* shape : {"resample", "single-turn"}) {
    SCOPED_TRACE(shape);
    auto rl = testing_fakes::rl_config();
    if (std::string(shape) == "resample") rl.rl.resample_zero_variance = true;
    else rl.rl.max_turns = 1;
    const std::string a = dir + "/stream_shape_sync.h5", b = dir + "/stream_shape_stream.h5";
    RunResult sync = run(*topo, *suite, "sync", a, nullptr, rl);
    RunResult stream = run(*topo, *suite, "stream", b, nullptr, rl);
    if (world_rank != 0) continue;
    expect_same_decisions(sync.steps, stream.steps);
    EXPECT_EQ(sync.params[0], stream.params[0]);
    EXPECT_EQ(sync.params[1], stream.params[1]);
    auto x = io::read_trajectory_run(a);
    auto y = io::read_trajectory_run(b);
    ASSERT_TRUE(x.has_value() && y.has_value());
    ASSERT_EQ(x->samples.size(), y->samples.size());
    int64_t resampled = 0;
    int max_turn = 0;
    for (size_t i = 0; i < x->samples.size(); ++i) {
      EXPECT_EQ(x->samples[i].verdict, y->samples[i].verdict) << i;
      EXPECT_EQ(x->samples[i].advantage, y->samples[i].advantage) << i;
      max_turn = std::max<int>(max_turn, x->samples[i].turn);
    }
    for (const auto& r : sync.steps) resampled += r.n_resampled;
    if (std::string(shape) == "resample") {
      EXPECT_GT(resampled, 0) << "no zero-variance group was replaced: the round path did not run";
    } else {
      EXPECT_EQ(max_turn, 1);
    }
  }
  free_topology(&*topo);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace leap::mpi
