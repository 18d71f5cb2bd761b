// See train_rl_loop.h.
#include "apps/train_rl_loop.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "apps/kl_reference.h"
#include "apps/rank_setup.h"
#include "apps/train_progress.h"
#include "common/check.h"
#include "io/checkpoint_dir.h"
#include "io/checkpoint_schedule.h"
#include "mpi/coordinator.h"

namespace leap::app {

namespace {

Status save(const RlRunContext& ctx, mpi::Coordinator& coord, int64_t step) {
  const TrainConfig& c = ctx.config;
  nlohmann::json state;
  state["dcp"] = coord.dcp().state_json();
  auto s = coord.sampler_state();
  state["task_sampler"] = {{"epoch", s.epoch}, {"position", s.position}};
  state["mode"] = "rl";
  state["cpu_s"] = coord.last_cpu_s();
  state["seed"] = c.app.run.seed;
  record_prompt_now(ctx.policy, &state);
  if (ctx.policy.reference) state["kl_reference"] = kl_reference_json(*ctx.policy.reference);
  // The trajectory rows of every step up to this one reach the disk before the checkpoint does:
  // resuming from it needs them (io::TrajectoryFile::resume).
  if (ctx.out) LEAP_RETURN_IF_ERROR(ctx.out->sync().with_context("syncing the trajectory file"));
  return coord.save_checkpoint({c.app.run.out_dir, step, state, c.train.keep_checkpoints, c.model.path,
                               c.model.max_shard_bytes()});
}

// Slurm sends USR1 a margin before its kill and never requeues a job that ran out of time: a
// step plus its checkpoint must fit in that margin, or the stop comes too late. Warns once.
class PreemptionMargin {
 public:
  explicit PreemptionMargin(const char* env) : margin_s_(env ? std::atof(env) : 0.0) {}
  void check(double step_and_checkpoint_s, const Logger& log) {
    if (warned_ || margin_s_ <= 0 || step_and_checkpoint_s <= margin_s_) return;
    warned_ = true;
    log.warn("a step and its checkpoint took {:.0f} s, more than the {:.0f} s between Slurm's USR1 and "
             "its kill (LEAP_PREEMPT_MARGIN_S): a stop may not finish in time; raise --signal=B:USR1@N "
             "in the jobscript or shorten the steps",
             step_and_checkpoint_s, margin_s_);
  }

 private:
  double margin_s_;
  bool warned_ = false;
};

}  // namespace

Status run_rl_coordinator(const RlRunContext& ctx) {
  const TrainConfig& c = ctx.config;
  const Logger& log = ctx.log;
  const StopSignal& stop = ctx.stop;
  mpi::CoordinatorOptions co;
  co.batch_tasks = c.train.batch_tasks;
  co.check_replicas_every = c.train.check_replicas_every;
  co.prompt_budget = ctx.prompt_budget;
  co.micro_batch_seqs = c.train.micro_batch_seqs;
  co.zero_stage2 = c.optim.zero_stage >= 2;
  mpi::Coordinator coord(ctx.topo, ctx.suite, c.rl, co, static_cast<uint64_t>(c.app.run.seed), *ctx.policy.replica,
                         *ctx.policy.prompt_format,
                         ctx.local_sandbox, log);
  int start_step = 0;
  if (!ctx.resume_state.is_null()) {
    start_step = ctx.resume_state["step"].get<int>() + 1;
    if (Status st = coord.dcp().load_state_json(ctx.resume_state.value("dcp", nlohmann::json())); !st)
      LEAP_FATAL("resuming the DCP state: " << st.message());
    const auto& ts = ctx.resume_state.value("task_sampler", nlohmann::json::object());
    coord.sampler().set_state({ts.value("epoch", int64_t{0}), ts.value("position", int64_t{0})});
    coord.set_cpu_offset(ctx.resume_state.value("cpu_s", 0.0));
  }
  const std::string h5 = c.app.run.out_dir + "/trajectories.h5";
  if (start_step >= c.train.steps) {
    log.info("the run in {} is already complete ({} of {} steps): nothing to do", c.app.run.out_dir, start_step,
             c.train.steps);
  } else {
    log.info("training: {} steps of {} tasks x {} samples, up to {} turns, DCP {}, {} pipeline ({}); trajectories in {}",
             c.train.steps - start_step, c.train.batch_tasks, c.rl.rl.group_size, c.rl.rl.max_turns, c.rl.dcp.mode,
             c.rl.rl.pipeline,
             coord.overlap_training() ? std::string("training during the rollout")
                                      : "training after the rollout: " + coord.overlap_training_off(),
             h5);
  }
  // A benchmark-only latency is named on every line, so no one mistakes its times for real ones.
  const std::string label = c.sandbox.simulated_exec_ms > 0
                                ? fmt::format(" | BENCHMARK: sandbox.simulated_exec_ms = {}", c.sandbox.simulated_exec_ms)
                                : std::string();
  TrainProgress progress(c.train.steps, c.rl.rl.max_turns, log, label);
  PreemptionMargin margin(std::getenv("LEAP_PREEMPT_MARGIN_S"));
  int stopped_by = 0;
  int64_t last_done = start_step - 1;
  io::CheckpointSchedule schedule(c.train.checkpoint_every, c.train.checkpoint_minutes,
                                  io::CheckpointSchedule::steady_seconds);
  for (int step = start_step; step < c.train.steps; ++step) {
    // A signal that arrived before any step of this run. Only then: after a step the flag is read
    // once, below, and a signal landing after that read is taken after the next step, with its
    // checkpoint; taken here it would end the run without one.
    if (step == start_step && (stopped_by = stop.requested()) != 0) break;
    const auto t0 = std::chrono::steady_clock::now();
    auto report = coord.run_step(step, ctx.out, step + 1 < c.train.steps);
    if (!report) LEAP_FATAL("training stopped at step " << step << ": " << report.status().message());
    progress.add(*report);
    last_done = step;
    // Read the signal once, so the step that saw it is the step that is checkpointed.
    const int sig = stop.requested();
    const bool last = step + 1 == c.train.steps;
    if (sig || schedule.due(step, last)) {
      const auto t_save = std::chrono::steady_clock::now();
      if (Status st = save(ctx, coord, step); !st) LEAP_FATAL("writing the checkpoint of step " << step << ": " << st.message());
      log_checkpoint(log, c.app.run.out_dir, step, ctx.topo.role_comm,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t_save).count());
      schedule.saved();
      margin.check(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), log);
    }
    if (sig && !last) {
      stopped_by = sig;
      break;
    }
  }
  coord.stop();
  if (stopped_by && ctx.stopped_early) *ctx.stopped_early = true;
  Status closed = ctx.out ? ctx.out->close() : Status::ok();
  if (last_done >= start_step) progress.summary();
  if (stopped_by && last_done < start_step) {
    log.info("stopped by {} before step {}: nothing new to checkpoint; continue with --resume latest (or auto)",
             signal_name(stopped_by), start_step);
  } else if (stopped_by) {
    log.info("stopped by {} after step {}: checkpoint {}/checkpoints/{}, trajectories flushed to {}; continue with "
             "--resume latest (or --resume auto)",
             signal_name(stopped_by), last_done, c.app.run.out_dir, io::checkpoint_dir_name(last_done), h5);
  }
  return closed;
}

}  // namespace leap::app
