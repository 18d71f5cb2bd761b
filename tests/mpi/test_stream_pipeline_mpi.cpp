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
  std::vector<tasks::TaskSampler::State> sampler_after;  // what each step's checkpoint records
  float params[2] = {0, 0};
};

// Three steps on `topo` with the given pipeline; rank 0 writes `h5` (when not empty).
RunResult run(const Topology& topo, const tasks::Suite& suite, const std::string& pipeline, const std::string& h5,
              FakeVerifier* local_verifier, rl::RlSections rl = testing_fakes::rl_config(), int verify_ms = 5) {
  rl.rl.pipeline = pipeline;
  Logger log(0, false, LogLevel::kWarn);
  CoordinatorOptions co;
  co.batch_tasks = 4;
  FakePolicy policy;
  policy.delay_ms = 2;
  FakeVerifier verifier;
  verifier.delay_ms = verify_ms;
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
      auto rep = coord.run_step(step, file.get(), step < 2);
      EXPECT_TRUE(rep.has_value()) << rep.status().message();
      if (rep.has_value()) out.steps.push_back(rep->row);
      out.sampler_after.push_back(coord.sampler_state());
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

// Row for row, the same samples of two runs' files with the same verdicts, classes, rewards,
// advantages and tokens; returns the first file's rows.
std::vector<io::SampleRow> expect_same_sample_rows(const std::string& a, const std::string& b) {
  auto x = io::read_trajectory_run(a);
  auto y = io::read_trajectory_run(b);
  if (!x.has_value() || !y.has_value()) {
    ADD_FAILURE() << "reading " << a << " or " << b;
    return {};
  }
  EXPECT_EQ(x->samples.size(), y->samples.size());
  for (size_t i = 0; i < std::min(x->samples.size(), y->samples.size()); ++i) {
    const io::SampleRow& p = x->samples[i];
    const io::SampleRow& q = y->samples[i];
    EXPECT_EQ(p.step, q.step) << i;
    EXPECT_EQ(p.task, q.task) << i;
    EXPECT_EQ(p.group, q.group) << i;
    EXPECT_EQ(p.sample, q.sample) << i;
    EXPECT_EQ(p.turn, q.turn) << i;
    EXPECT_EQ(p.verdict, q.verdict) << i;
    EXPECT_EQ(p.dcp, q.dcp) << i;
    EXPECT_EQ(p.reward, q.reward) << i;
    EXPECT_EQ(p.advantage, q.advantage) << i;
    EXPECT_EQ(p.completion_tokens, q.completion_tokens) << i;
  }
  return x->samples;
}

// The tests' ranks (4), suite and layout (two_policy_two_sandbox), and where they write.
class StreamPipelineMpi : public testing::Test {
 protected:
  void SetUp() override {
    int world_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    ASSERT_EQ(world_size, 4);
    suite = testing_fakes::fake_suite();
    ASSERT_TRUE(suite.has_value()) << suite.status().message();
    topo = two_policy_two_sandbox();
    ASSERT_TRUE(topo.has_value());
  }
  int world_rank = 0;
  Expected<tasks::Suite> suite = internal_error("not read");
  Expected<Topology> topo = internal_error("not made");
  const std::string dir = std::string(LEAP_BINARY_DIR);

  // After both runs: their replicas took the same update. Frees the layout; true on rank 0 only,
  // which goes on to check the rows (the other ranks have then passed the test's last barrier).
  bool same_update_then_rank0(const RunResult& a, const RunResult& b) {
    free_topology(&*topo);
    if (world_rank == 0 || topo->self().role == Role::kPolicy) {
      EXPECT_EQ(a.params[0], b.params[0]);
      EXPECT_EQ(a.params[1], b.params[1]);
    }
    if (world_rank != 0) MPI_Barrier(MPI_COMM_WORLD);
    return world_rank == 0;
  }
};

TEST_F(StreamPipelineMpi, SameDecisionsAsSyncAndAccountedTime) {
  RunResult sync = run(*topo, *suite, "sync", dir + "/stream_test_sync.h5", nullptr);
  RunResult stream = run(*topo, *suite, "stream", dir + "/stream_test_stream.h5", nullptr);
  if (!same_update_then_rank0(sync, stream)) return;
  expect_same_decisions(sync.steps, stream.steps);

  // Row for row, the same samples with the same verdicts, classes, rewards and advantages.
  const std::vector<io::SampleRow> rows = expect_same_sample_rows(dir + "/stream_test_sync.h5", dir + "/stream_test_stream.h5");
  int later_turns = 0;
  for (const auto& x : rows) later_turns += x.turn > 1;
  EXPECT_GT(later_turns, 0);  // DCP expanded some groups, so the later-turn path ran
  // sync sends every later turn back to the rank that generated the sample's previous turn (its
  // KV cache is there); turn 1 was spread over both policy ranks.
  std::map<std::tuple<int64_t, int32_t, int32_t, int32_t>, int32_t> rank_of;
  std::set<int32_t> turn1_ranks;
  for (const auto& x : rows) {
    rank_of[{x.step, x.group, x.sample, x.turn}] = x.mpi_rank;
    if (x.turn == 1) turn1_ranks.insert(x.mpi_rank);
  }
  EXPECT_EQ(turn1_ranks.size(), 2u);
  for (const auto& x : rows) {
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
TEST_F(StreamPipelineMpi, DynamicSamplingAndSingleTurnDecideAsSync) {
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
    int64_t resampled = 0;
    int max_turn = 0;
    for (const auto& x : expect_same_sample_rows(a, b)) max_turn = std::max<int>(max_turn, x.turn);
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

// rl.rollout_ahead: idle policy ranks start the next step's turn 1 while a step's last verdicts
// come in. The fakes' completions depend on their seeds alone, not on the weights, so the run
// must decide exactly as one without it: the same rows and update, each sample of the next step
// filed under its own step, group and sample, none lost or generated twice, and each checkpoint
// recording the task sampler as it stood between the steps (before the next step's tasks were
// drawn ahead). Verification is slowed so that the policy ranks wait, as the option is for.
TEST_F(StreamPipelineMpi, RolloutAheadDecidesAsWithout) {
  const std::string a = dir + "/stream_ahead_off.h5", b = dir + "/stream_ahead_on.h5";
  auto rl = testing_fakes::rl_config();
  RunResult off = run(*topo, *suite, "stream", a, nullptr, rl, 20);
  rl.rl.rollout_ahead = true;
  RunResult on = run(*topo, *suite, "stream", b, nullptr, rl, 20);
  if (!same_update_then_rank0(off, on)) return;
  expect_same_decisions(off.steps, on.steps);
  int ahead = 0;
  for (const auto& r : on.steps) ahead += r.n_rollout_ahead;
  std::printf("turn-1 samples generated a step ahead: %d\n", ahead);
  EXPECT_GT(ahead, 0) << "no idle policy rank started the next step: the option's path did not run";
  EXPECT_EQ(on.steps[0].n_rollout_ahead, 0);  // nothing comes before the first step
  for (const auto& r : off.steps) EXPECT_EQ(r.n_rollout_ahead, 0);
  ASSERT_EQ(off.sampler_after.size(), on.sampler_after.size());
  for (size_t i = 0; i < off.sampler_after.size(); ++i) {
    EXPECT_EQ(off.sampler_after[i].epoch, on.sampler_after[i].epoch) << i;
    EXPECT_EQ(off.sampler_after[i].position, on.sampler_after[i].position) << i;
  }
  EXPECT_FALSE(expect_same_sample_rows(a, b).empty());
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace leap::mpi
