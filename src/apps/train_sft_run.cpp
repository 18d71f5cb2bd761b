// See train_sft_run.h.
#include "apps/train_sft_run.h"

#include <fmt/format.h>

#include <chrono>

#include "apps/rank_setup.h"
#include "apps/train_progress.h"

#include "common/check.h"
#include "io/checkpoint_dir.h"
#include "io/checkpoint_schedule.h"
#include "model/checkpoint.h"
#include "model/generation_config.h"
#include "mpi/checkpoint_write.h"
#include "mpi/coordinator.h"
#include "mpi/sft_trainer.h"

namespace leap::app {

namespace {

// Where the run continues: step 0, or the step after the checkpoint's, with its data order.
mpi::SftPosition start_position(const nlohmann::json& resume_state) {
  mpi::SftPosition from;
  if (resume_state.is_null()) return from;
  from.next_step = resume_state["step"].get<int>() + 1;
  const auto& order = resume_state.value("data_order", nlohmann::json::object());
  from.data_order = {order.value("epoch", int64_t{0}), order.value("position", int64_t{0})};
  return from;
}

// Rank 0: the training examples, verified through the JobDispatcher.
Expected<std::vector<mpi::TrainSample>> build_material(const SftRunContext& ctx) {
  const TrainConfig& c = ctx.config;
  PolicyState& policy = ctx.policy;
  mpi::JobDispatcher dispatcher(ctx.topo, ctx.local_sandbox, 1, ctx.log);
  rl::PromptBuilder prompts(c.rl.prompt.options(ctx.prompt_budget), *policy.prompt_format);
  LEAP_ASSIGN_OR_RETURN(auto suite, tasks::load_suite(c.tasks.suite));
  mpi::SftMaterialStats stats;
  auto examples = mpi::build_sft_material(
      suite, prompts, dispatcher, c.sft, static_cast<uint64_t>(c.app.run.seed),
      static_cast<size_t>(policy.model->config().max_position_embeddings), &stats);
  if (!examples) return examples.status().with_context("building the SFT material");
  ctx.log.info(
      "sft material: {} train tasks -> {} references, {} verified rewrites ({} dropped), {} repair "
      "turns "
      "({} dropped), {} longer than the context",
      stats.tasks, stats.references, stats.rewrites, stats.rewrites_dropped, stats.repairs,
      stats.repairs_dropped, stats.too_long);
  // Nothing to learn from: the steps would run AdamW's decay alone and write that as the policy.
  if (examples->empty())
    return invalid_input(fmt::format("the SFT material of {} is empty: none of its {} train tasks gave an example "
                                     "that fits the model's context ({} longer than it); give a suite or model "
                                     "whose references fit",
                                     c.tasks.suite, stats.tasks, stats.too_long));
  if (stats.references < stats.tasks)
    ctx.log.warn(
        "{} task(s) have no example that fits the context: raise max_position_embeddings or "
        "shorten prompts",
        stats.tasks - stats.references);
  return examples;
}

// sft.save_to, when set: the policy to ship, its shards written by the policy ranks in parallel.
Status export_policy(const SftRunContext& ctx) {
  const TrainConfig& c = ctx.config;
  if (c.sft.save_to.empty()) return Status::ok();
  const mpi::ExportRequest req{c.sft.save_to, c.sft.save_dtype == "bf16" ? model::DType::kBF16 : model::DType::kF32,
                               c.model.max_shard_bytes(), c.model.path};
  LEAP_RETURN_IF_ERROR(mpi::export_model(ctx.topo.role_comm, &req, *ctx.policy.model));
  if (ctx.topo.is_coordinator()) ctx.log.info("policy written to {}", c.sft.save_to);
  return Status::ok();
}

}  // namespace

Status run_sft(const SftRunContext& ctx) {
  const TrainConfig& c = ctx.config;
  const mpi::Topology& topo = ctx.topo;
  PolicyState& policy = ctx.policy;
  const Logger& log = ctx.log;
  const mpi::SftPosition from = start_position(ctx.resume_state);
  const bool complete = from.next_step >= c.train.steps;
  mpi::TrainWork material;
  Status refused;  // rank 0's bad input (exit 2), which reaches the other ranks as an empty material
  if (topo.is_coordinator()) {
    if (complete) {
      log.info("the SFT run in {} is already complete ({} of {} steps): nothing to do",
               c.app.run.out_dir, from.next_step, c.train.steps);
    } else {
      auto examples = build_material(ctx);
      // Anything but bad input is the infrastructure's: the job aborts (the other ranks wait to serve).
      if (!examples && examples.status().exit_code() != 2) LEAP_FATAL(examples.status().message());
      if (examples) material.samples = std::move(*examples);
      else refused = examples.status();
    }
    mpi::Control stop{mpi::Control::Kind::kStop, 0, 0};
    mpi::broadcast(stop, 0, topo.world);
  } else if (topo.self().role == mpi::Role::kPolicy) {
    LEAP_RETURN_IF_ERROR(mpi::serve_policy(topo, *policy.replica));
  } else {
    return mpi::serve_sandbox(topo, *ctx.local_sandbox);
  }
  if (complete) {
    // A job killed between the last checkpoint and the export resumes here: the policy is the
    // last checkpoint's, so it is written again (the export replaces its files).
    if (!c.sft.save_to.empty() && topo.is_coordinator())
      log.info("writing the complete run's policy to {} (sft.save_to) again", c.sft.save_to);
    return export_policy(ctx);
  }
  mpi::broadcast(material, 0, topo.role_comm);
  // A material is never empty (build_material refuses that), so an empty one is rank 0's refusal:
  // every policy rank stops with exit 2, and rank 0's message says why.
  if (material.samples.empty()) {
    *ctx.material_refused = true;
    return topo.is_coordinator() ? refused : invalid_input("no SFT material: rank 0's error says why");
  }
  const std::string material_hash = mpi::sft_material_hash(material.samples);
  const std::string saved_hash = ctx.resume_state.is_null()
                                     ? material_hash
                                     : ctx.resume_state.value("material_hash", std::string("none"));
  if (topo.is_coordinator() && saved_hash != material_hash)
    log.warn(
        "the SFT material differs from the checkpoint's (hash {} vs {}: another suite, sft.* "
        "options or seed?): "
        "the data order continues, over other examples",
        material_hash, saved_hash);

  io::CheckpointSchedule schedule(c.train.checkpoint_every, c.train.checkpoint_minutes,
                                  io::CheckpointSchedule::steady_seconds);
  int stopped_by = 0;
  auto step_done = [&](int step, const tasks::TaskSampler::State& order, bool last) -> Expected<bool> {
    // Rank 0's decisions to every policy rank: whether to checkpoint (its schedule may be by the
    // clock; a stop signal checkpoints the step it arrived in), each rank writing its part, and
    // the signal that stops the run, if any (read once, so the step checkpointed is the last).
    int decision[2] = {0, 0};
    if (topo.is_coordinator()) {
      decision[1] = last ? 0 : ctx.stop.requested();
      decision[0] = decision[1] != 0 || schedule.due(step, last) ? 1 : 0;
    }
    MPI_Bcast(decision, 2, MPI_INT, 0, topo.role_comm);
    stopped_by = decision[1];
    if (!decision[0]) return true;
    io::CheckpointRequest req;
    if (topo.is_coordinator()) {
      req = {c.app.run.out_dir, step, nlohmann::json{{"mode", "sft"},
                                                     {"seed", c.app.run.seed},
                                                     {"data_order", {{"epoch", order.epoch}, {"position", order.position}}},
                                                     {"material_hash", material_hash}},
             c.train.keep_checkpoints, c.model.path, c.model.max_shard_bytes()};
      record_prompt_now(policy, &req.state);
    }
    const auto t_save = std::chrono::steady_clock::now();
    LEAP_RETURN_IF_ERROR(mpi::write_checkpoint(topo.role_comm, &req, *policy.model, *policy.optimizer,
                                               policy.zero.get()));
    if (topo.is_coordinator()) {
      log_checkpoint(log, c.app.run.out_dir, step, topo.role_comm,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t_save).count());
      schedule.saved();
    }
    return stopped_by == 0;
  };
  auto report =
      mpi::train_sft(*policy.model, *policy.optimizer, material.samples, c.train.steps,
                     c.train.micro_batch_seqs, c.sft, static_cast<uint64_t>(c.app.run.seed),
                     topo.role_comm, log, policy.reducer.get(), policy.zero ? &policy.zero_shard : nullptr, from,
                     step_done);
  if (!report) return report.status().with_context("SFT");
  if (stopped_by) {
    *ctx.stopped_early = true;
    if (topo.is_coordinator())
      log.info("stopped by {} after step {}: checkpoint written; continue with --resume latest (or auto)",
               signal_name(stopped_by), report->steps - 1);
    return Status::ok();
  }
  if (topo.is_coordinator())
    log.info("sft done: {} steps, loss {:.4f} -> {:.4f}", report->steps, report->first_loss, report->last_loss);
  return export_policy(ctx);
}

}  // namespace leap::app
