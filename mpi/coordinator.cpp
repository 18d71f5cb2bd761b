// The coordinator's step and the serve loops of the other ranks.
#include "mpi/coordinator.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <utility>

#include "common/check.h"
#include "common/cpu_time.h"
#include "common/stopwatch.h"
#include "mpi/grad_reduce.h"
#include "mpi/train_samples.h"
#include "mpi/work_balance.h"

namespace leap::mpi {

int64_t prompt_budget(int64_t context, int64_t max_new_tokens) {
  return std::max<int64_t>(64, context - max_new_tokens);
}

Coordinator::Coordinator(const Topology& topo, const tasks::Suite& suite, const rl::RlSections& rl,
                         CoordinatorOptions opts, uint64_t seed, PolicyEngine& policy,
                         const rl::PromptFormat& format, VerifyEngine* local_verifier, const Logger& log)
    : topo_(topo),
      suite_(suite),
      rl_(rl),
      opts_(opts),
      seed_(seed),
      policy_(policy),
      turns_(topo, policy, local_verifier, opts.sandbox_retries, log),
      stream_(topo, policy, local_verifier, opts.sandbox_retries, log),
      dcp_(rl.dcp.options(rl.rl.max_turns)),
      sampler_(tasks::task_indices(suite, tasks::Split::kTrain), seed),
      prompts_(rl.prompt.options(opts.prompt_budget), format) {
  LEAP_CHECK(topo.is_coordinator(), "the Coordinator runs on world rank 0 only");
  // Training during the rollout needs one update a step, fed by one gradient accumulated in
  // any order (rl_config.cpp, rl.overlap_training).
  if (!rl.rl.overlap_training) overlap_off_ = "rl.overlap_training = false";
  else if (rl.rl.pipeline != "stream") overlap_off_ = "rl.pipeline = " + rl.rl.pipeline;
  else if (rl.rl.ppo_epochs != 1 || rl.rl.mini_batches != 1) overlap_off_ = "more than one update a step";
  else if (opts.zero_stage2) overlap_off_ = "optim.zero_stage = 2";
  else if (!policy.supports_train_early()) overlap_off_ = "the policy engine cannot";
  // Dynamic sampling draws further tasks within a step, after the next step's would be drawn.
  LEAP_CHECK(!rl.rl.rollout_ahead || (rl.rl.pipeline == "stream" && !rl.rl.resample_zero_variance),
             "rl.rollout_ahead needs rl.pipeline = stream and rl.resample_zero_variance = false (RlConfig::validate)");
  if (overlap_off_.empty()) {
    overlap_ = OverlapTraining{rl.rl.reward_options(), rl.rl.advantage_options(), trajectory_once(),
                               std::max(1, opts.micro_batch_seqs)};
  }
}

bool Coordinator::trajectory_once() const {
  // Exact only under token-mean with one mini-batch (train_samples.h).
  return rl_.rl.train_trajectory_once && rl_.rl.mini_batches == 1 &&
         rl::parse_loss_aggregation(rl_.rl.loss_agg) == rl::LossAggregation::kTokenMean;
}

TrainReport Coordinator::train(const StepState& state, int64_t step, const TurnTimes& times, io::StepRow* row) {
  announce(Control::Kind::kTrain, step, 0, topo_.world);
  const std::vector<int>& policy_ranks = turns_.policy_ranks();
  const int n = static_cast<int>(policy_ranks.size());
  TrainSampleOptions so;
  so.mini_batches = rl_.rl.mini_batches;
  so.ppo_epochs = rl_.rl.ppo_epochs;
  so.trajectory_once = trajectory_once();
  TrainPlan plan = plan_training(state.train_items(), n, so);
  row->train_sequences = plan.sequences + times.early_sequences;
  row->train_positions = plan.positions + times.early_positions;
  row->train_sequences_early = times.early_sequences;
  std::vector<TrainWork>& work = plan.work;
  // Every rank alike: the normaliser goes to the step whenever the rollout may have trained.
  for (auto& w : work) w.deferred_norm = overlap_.has_value();
  for (int p = 1; p < n; ++p) send(work[static_cast<size_t>(p)], policy_ranks[static_cast<size_t>(p)], topo_.world);
  const auto t0 = std::chrono::steady_clock::now();
  TrainReport total = policy_.train(work[0], topo_.role_comm);
  total.busy_s = seconds_since(t0);
  for (int p = 1; p < n; ++p) {
    auto r = recv<TrainReport>(policy_ranks[static_cast<size_t>(p)], topo_.world);
    LEAP_CHECK(r.has_value(), r.status().message());
    total.merge(*r);
  }
  return total;
}

Status Coordinator::run_turns(StepState& state, TurnTimes* times, RolloutAhead* carried, RolloutAhead* next) {
  if (rl_.rl.pipeline == "sync") return turns_.run_turns(state, suite_, prompts_, dcp_, rl_.rl.max_turns, times);
  return stream_.run_turns(state, suite_, prompts_, dcp_, rl_.rl.max_turns, times,
                           {overlap_ ? &*overlap_ : nullptr, rl_.rl.speculative_turns, carried, next});
}

StepState Coordinator::draw_step(int64_t step) {
  return StepState(step, sampler_.next_batch(opts_.batch_tasks), StepOptions{rl_.rl.group_size, rl_.rl.max_turns, seed_});
}

void Coordinator::start_next_step(int64_t next_step) {
  // The checkpoint after this step must record the sampler as it stands between the steps: a
  // resumed run draws the next step's tasks itself.
  sampler_between_steps_ = sampler_.state();
  StepState next = draw_step(next_step);
  RolloutAhead ahead;
  auto items = next.make_turn(1, suite_, prompts_, &ahead.dropped);
  if (!items) {  // a prompt that cannot be built fails the next step itself, in its own phase
    sampler_.set_state(*sampler_between_steps_);
    sampler_between_steps_.reset();
    return;
  }
  ahead.items = std::move(*items);
  next_state_.emplace(std::move(next));
  ahead_.emplace(std::move(ahead));
}

Expected<StepReport> Coordinator::run_step(int64_t step, io::TrajectoryFile* out, bool another_follows) {
  auto t_step = std::chrono::steady_clock::now();
  TurnTimes times;
  // This step's turn 1, when the step before started it (rl.rollout_ahead).
  std::optional<RolloutAhead> carried = std::exchange(ahead_, std::nullopt);
  sampler_between_steps_.reset();
  StepState state = next_state_ ? std::move(*next_state_) : draw_step(step);
  next_state_.reset();
  LEAP_CHECK(state.step() == step, "step " << step << " was started ahead as step " << state.step());
  const int ahead_done = carried ? static_cast<int>(carried->done.size()) : 0;
  if (another_follows && rl_.rl.rollout_ahead && rl_.rl.pipeline == "stream") start_next_step(step + 1);
  LEAP_RETURN_IF_ERROR(run_turns(state, &times, carried ? &*carried : nullptr, ahead_ ? &*ahead_ : nullptr));
  state.score(rl_.rl.reward_options(), rl_.rl.advantage_options());
  // Dynamic sampling: groups with nothing to learn are replaced by fresh tasks, round by round.
  int resampled = 0;
  const int cap = rl_.rl.resample_max_groups > 0 ? rl_.rl.resample_max_groups : opts_.batch_tasks;
  while (rl_.rl.resample_zero_variance && resampled < cap) {
    const int k = std::min(state.zero_variance_groups_of_round(), cap - resampled);
    if (k == 0) break;
    state.add_groups(sampler_.next_batch(k));
    resampled += k;
    LEAP_RETURN_IF_ERROR(run_turns(state, &times));
    state.score(rl_.rl.reward_options(), rl_.rl.advantage_options());
  }
  auto t0 = std::chrono::steady_clock::now();
  StepReport report;
  TrainReport tr = train(state, step, times, &report.row);
  double train_s = seconds_since(t0);
  if (opts_.check_replicas_every > 0 && (step + 1) % opts_.check_replicas_every == 0) {
    announce(Control::Kind::kCheckReplicas, step, 0, topo_.world);
    LEAP_RETURN_IF_ERROR(check_replicas_identical(policy_.params_checksum(), topo_.role_comm));
  }
  announce(Control::Kind::kCpuTime, step, 0, topo_.world);
  const double cpu_s = job_cpu_seconds(topo_.world);
  const rl::DcpStepStats& stats = state.scores().dcp;
  dcp_.update(stats);

  std::vector<io::SampleRow> rows;
  std::vector<io::SampleText> texts;
  state.fill_rows(&report.row, &rows, &texts);
  io::StepRow& r = report.row;
  r.n_resampled = resampled;
  r.cpu_s = last_cpu_s_ = cpu_offset_s_ + cpu_s;
  r.gen_s = times.gen_s;
  r.sandbox_s = times.sandbox_s;
  r.train_s = train_s;
  r.time_s = seconds_since(t_step);
  // Time accounting (io::StepRow): busy, waiting on the sandbox, or idle otherwise.
  const double n_policy = static_cast<double>(turns_.policy_ranks().size());
  r.policy_busy_s = times.policy_gen_s + tr.busy_s + tr.early_s;
  r.policy_wait_s = times.policy_wait_s;
  r.policy_drain_s = times.drain_wait_measured ? times.policy_drain_wait_s
                                               : std::min(times.policy_wait_s, n_policy * times.drain_s);
  r.policy_idle_s = std::max(0.0, n_policy * r.time_s - r.policy_busy_s - r.policy_wait_s);
  r.sandbox_busy_s = times.sandbox_busy_s;
  r.sandbox_idle_s = std::max(0.0, times.sandbox_slots * r.time_s - times.sandbox_busy_s);
  r.n_jobs_overlapped = times.jobs_during_generation;
  r.n_speculative = times.speculative_turns;
  r.n_speculative_dropped = times.speculative_dropped;
  r.speculative_dropped_tokens = times.speculative_dropped_tokens;
  r.n_rollout_ahead = ahead_done;
  r.loss = tr.loss;
  // Means over the trained tokens: NaN when the step trained none (every group dropped for
  // all-zero advantages), as the pass rates are NaN when every trajectory was void; a 0 would
  // plot as a ratio_mean far from 1.
  const double none = std::nan("");
  r.kl = tr.tokens > 0 ? tr.kl_sum / tr.tokens : none;
  r.entropy = tr.tokens > 0 ? tr.neg_logp_sum / tr.tokens : none;
  r.clip_frac = tr.tokens > 0 ? tr.clipped / tr.tokens : none;
  r.ratio_mean = tr.tokens > 0 ? tr.ratio_sum / tr.tokens : none;
  r.ratio_max = tr.ratio_max;
  r.grad_norm = tr.grad_norm;
  r.lr = tr.lr;
  // What expanding every group with a failure would have cost: each failed turn-1 sample of a
  // group that was not expanded would have taken up to max_turns - 1 more jobs.
  report.jobs_if_unpruned = stats.sandbox_jobs;
  report.reference_runs = times.reference_runs;
  for (const auto& g : state.groups()) {
    for (const auto& s : g.samples) {
      auto t = s.trajectory();
      if (t.num_turns() == 0) continue;
      ++report.samples;
      report.void_samples += t.is_void();
      if (g.dcp.label != rl::DcpLabel::kExpanded && !t.succeeded() && !t.is_void())
        report.jobs_if_unpruned += rl_.rl.max_turns - 1;
    }
  }
  if (out) LEAP_RETURN_IF_ERROR(out->append_step(r, rows, texts));
  return report;
}

Status Coordinator::save_checkpoint(const io::CheckpointRequest& req) {
  announce(Control::Kind::kCheckpoint, req.step, 0, topo_.world);
  return policy_.write_checkpoint(topo_.role_comm, &req);
}

void Coordinator::stop() { announce(Control::Kind::kStop, 0, 0, topo_.world); }

double job_cpu_seconds(MPI_Comm world) {
  const double mine = process_tree_cpu_seconds();
  double sum = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, world);
  return sum;
}

Status serve_policy(const Topology& topo, PolicyEngine& policy) {
  for (;;) {
    Control c;
    broadcast(c, 0, topo.world);
    switch (c.kind) {
      case Control::Kind::kRollout: {
        auto work = recv<RolloutWork>(0, topo.world);
        if (!work) return work.status();
        const auto t0 = std::chrono::steady_clock::now();
        RolloutResult result{policy.generate(work->items)};
        result.busy_s = seconds_since(t0);
        send(result, 0, topo.world);
        break;
      }
      case Control::Kind::kStream:
        LEAP_RETURN_IF_ERROR(serve_policy_stream(topo, policy));
        break;
      case Control::Kind::kTrain: {
        auto work = recv<TrainWork>(0, topo.world);
        if (!work) return work.status();
        const auto t0 = std::chrono::steady_clock::now();
        TrainReport report = policy.train(*work, topo.role_comm);
        report.busy_s = seconds_since(t0);
        send(report, 0, topo.world);
        break;
      }
      case Control::Kind::kCheckReplicas:
        LEAP_RETURN_IF_ERROR(check_replicas_identical(policy.params_checksum(), topo.role_comm));
        break;
      case Control::Kind::kCpuTime:
        job_cpu_seconds(topo.world);
        break;
      case Control::Kind::kCheckpoint:
        LEAP_RETURN_IF_ERROR(policy.write_checkpoint(topo.role_comm, nullptr));
        break;
      case Control::Kind::kSandbox: break;
      case Control::Kind::kStop: return Status::ok();
    }
  }
}

Status serve_sandbox(const Topology& topo, VerifyEngine& verifier) {
  for (;;) {
    Control c;
    broadcast(c, 0, topo.world);
    if (c.kind == Control::Kind::kStop) return Status::ok();
    if (c.kind == Control::Kind::kCpuTime) job_cpu_seconds(topo.world);
    if (c.kind == Control::Kind::kStream) LEAP_RETURN_IF_ERROR(serve_sandbox_stream(topo, verifier));
    if (c.kind != Control::Kind::kSandbox) continue;
    SandboxResults pull{{}, verifier.slots()};
    for (;;) {
      send(pull, 0, topo.world);
      auto jobs = recv<SandboxJobs>(0, topo.world);
      if (!jobs) return jobs.status();
      if (jobs->jobs.empty()) break;  // the turn's queue is drained
      pull.results = verifier.verify(jobs->jobs);
      pull.free_slots = verifier.slots();
    }
  }
}

}  // namespace leap::mpi
