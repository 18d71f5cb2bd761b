// `leap train`: the MPI training program. Parses the config on every rank before MPI starts (a
// bad config exits 2 everywhere, with nothing written), lays out the ranks, builds each rank's
// engines (and, with rl.kl_beta > 0, the KL reference: taken before a checkpoint is loaded, so
// it is the initial weights on resume too), loads the checkpoint it resumes from, agrees across
// ranks that setup worked, then runs the RL steps (rank 0 coordinates, the other policy ranks
// serve rollouts and training, the sandbox ranks serve verification) or the SFT run
// (train_sft_run.h).
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/kl_reference.h"
#include "apps/rank_setup.h"
#include "apps/subcommands.h"
#include "apps/train_config.h"
#include "apps/train_rl_loop.h"
#include "apps/train_sft_run.h"
#include "common/check.h"
#include "common/fs_util.h"
#include "common/stop_signal.h"
#include "io/checkpoint_dir.h"
#include "io/trajectory_file.h"
#include "leap/version.h"
#include "model/checkpoint.h"
#include "mpi/agree.h"
#include "mpi/coordinator.h"
#include "mpi/sandbox_engine.h"
#include "mpi/zero_shard.h"
#include "rl/dcp.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace leap::app {

namespace {

std::string run_fingerprint(const TrainConfig& c, const model::ModelConfig& m) {
  return fmt::format("seed={} suite={} G={} B={} max_turns={} model={}x{}x{}", c.app.run.seed, c.tasks.suite,
                     c.rl.rl.group_size, c.train.batch_tasks, c.rl.rl.max_turns, m.num_hidden_layers, m.hidden_size,
                     m.vocab_size);
}

// A checkpoint of the other mode (an RL run resumed with --mode sft, or the reverse) cannot be
// continued: its state.json lacks what the mode needs.
Status check_checkpoint_mode(const nlohmann::json& state, const std::string& dir, const std::string& mode) {
  const std::string saved = state.value("mode", std::string("rl"));
  if (saved == mode) return Status::ok();
  return invalid_input(fmt::format("{}/state.json: a checkpoint of a --mode {} run cannot be resumed with --mode {}",
                                   dir, saved, mode));
}

// Every draw of a run derives from its seed (sampling, the suite's order, SFT's data order), so a
// resume with another seed would not continue the run it names: refused, naming the seed to give.
Status check_checkpoint_seed(const nlohmann::json& state, const std::string& dir, int64_t seed) {
  const nlohmann::json saved = state.value("seed", nlohmann::json());
  if (!saved.is_number_integer() || saved.get<int64_t>() == seed) return Status::ok();
  return invalid_input(fmt::format("{}/state.json: the checkpoint's run has run.seed = {}, this one {}: resume with "
                                   "--run.seed {} (or start a new run in another --run.out_dir)",
                                   dir, saved.get<int64_t>(), seed, saved.get<int64_t>()));
}

// A checkpoint's DCP state, read into a scratch controller: a damaged one is an error (exit 2)
// here, before rank 0 cuts the trajectory file back to the checkpoint's step.
Status check_dcp_state(const nlohmann::json& state, const std::string& dir, const rl::RlSections& rl) {
  rl::DcpController scratch(rl.dcp.options(rl.rl.max_turns));
  return scratch.load_state_json(state.value("dcp", nlohmann::json())).with_context(dir + "/state.json");
}

// The checkpoint a run continues from: "" for a fresh run. `auto` (what a requeued job runs)
// resumes when the run has a checkpoint and starts fresh when it has none.
Expected<std::string> resume_dir(const TrainConfig& c) {
  const std::string& r = c.train.resume;
  if (r.empty()) {
    // A fresh run would prune the earlier run's checkpoints as its own (the newest `keep` by
    // step), deleting its own first ones, and a later --resume would take the earlier run's.
    if (auto earlier = io::latest_checkpoint(c.app.run.out_dir))
      return invalid_input(fmt::format(
          "run.out_dir {} holds an earlier run's checkpoints (the newest: {}): continue that run with --resume "
          "latest, or start a new one in another --run.out_dir",
          c.app.run.out_dir, *earlier));
    return std::string();
  }
  if (r == "latest" || r == "auto") {
    auto dir = io::latest_checkpoint(c.app.run.out_dir);
    if (!dir && r == "auto" && dir.status().code() == StatusCode::kNotFound) return std::string();
    return dir;
  }
  if (!fs::exists(r + "/state.json"))
    return not_found("--resume " + r + ": not a checkpoint folder (no state.json); give RUN/checkpoints/step_NNNNNN, "
                     "'latest' or 'auto'");
  return r;
}

// A run restarted with --resume auto that never reached its first checkpoint: its trajectory
// file holds steps no checkpoint can continue. It is renamed, not deleted, so nothing is lost.
Status set_aside_unresumable(const std::string& path, const Logger& log) {
  if (!fs::exists(path)) return Status::ok();
  std::string aside = path + ".unresumable";
  for (int i = 1; fs::exists(aside); ++i) aside = path + ".unresumable." + std::to_string(i);
  std::error_code ec;
  fs::rename(path, aside, ec);
  if (ec) return io_error("cannot rename " + path + " to " + aside + ": " + ec.message());
  log.warn("{} had no checkpoint to resume from: starting over; the earlier attempt's steps are kept in {}", path,
           aside);
  return Status::ok();
}

// sft.save_to is replaced whole at the end (model::begin_staged_export): the run's own folder, or
// one among its checkpoints (whose .tmp_/.old_ folders begin_checkpoint clears), would take the
// run's checkpoints with it. Refused before the run, not after it.
Status check_export_beside_run(const std::string& save_to, const std::string& out_dir) {
  if (save_to.empty()) return Status::ok();
  std::error_code ec;
  const fs::path to = fs::weakly_canonical(fs::absolute(save_to), ec);
  const fs::path run = fs::weakly_canonical(fs::absolute(out_dir), ec);
  const fs::path ckpts = run / "checkpoints";
  auto within = [&](const fs::path& root) {
    return std::mismatch(root.begin(), root.end(), to.begin(), to.end()).first == root.end();
  };
  if (to == run || within(ckpts))
    return invalid_input(fmt::format("sft.save_to {} is {}: the export replaces that folder whole; give a folder "
                                     "of its own, e.g. --sft.save_to {}",
                                     save_to, to == run ? "run.out_dir itself" : "inside run.out_dir's checkpoints",
                                     (run / "policy").string()));
  return Status::ok();
}

// Rank 0, before the run: the train split against the model's context (check_prompts_fit), the
// output folders of SFT (RL's is made below, SFT's first used at its first checkpoint), and
// settings that run but cannot do what they are for.
Status check_train_setup(const TrainConfig& c, const tasks::Suite& suite, const PolicyState& policy,
                         const Logger& log) {
  const std::vector<int> train = tasks::task_indices(suite, tasks::Split::kTrain);
  LEAP_RETURN_IF_ERROR(check_prompts_fit(c, policy, suite, train, "train tasks", log));
  if (c.train.mode == "sft") {
    std::error_code ec;
    fs::create_directories(c.app.run.out_dir, ec);
    if (ec)
      return invalid_input("run.out_dir " + c.app.run.out_dir + " cannot be created (" + ec.message() +
                           "): SFT writes its checkpoints there; give another --run.out_dir");
    LEAP_RETURN_IF_ERROR(check_folder_creatable(c.sft.save_to, "sft.save_to"));
    return check_export_beside_run(c.sft.save_to, c.app.run.out_dir);
  }
  if (c.train.batch_tasks > static_cast<int>(train.size()))
    log.warn("train.batch_tasks {} exceeds the {} train tasks of {}: a step draws some task twice", c.train.batch_tasks,
             train.size(), suite.path);
  if (!c.rl.rl.kl_reference.empty() && c.rl.rl.kl_beta == 0)
    log.warn("rl.kl_reference {} is set but rl.kl_beta = 0: no KL term, and the reference is not loaded; set "
             "rl.kl_beta > 0 to use it",
             c.rl.rl.kl_reference);
  if (c.sampler.temperature == 0 || c.sampler.top_k == 1)
    log.warn("sampler.temperature {} and sampler.top_k {} pick the most likely token: a group's {} samples are one "
             "answer, their advantages zero, and RL learns nothing; sample with temperature > 0",
             c.sampler.temperature, c.sampler.top_k, c.rl.rl.group_size);
  return Status::ok();
}

}  // namespace

// The exit code of a run a signal stopped before its end, with its checkpoint written:
// EX_TEMPFAIL of sysexits.h, "try again later".
constexpr int kExitStoppedEarly = 75;

int run_train(const std::vector<std::string>& args) {
  OptionSet opts;
  TrainConfig c;
  c.declare(opts);
  const auto validate = [&c]() -> Status {
    LEAP_RETURN_IF_ERROR(c.rl.validate());
    if (c.train.mode == "rl") LEAP_RETURN_IF_ERROR(c.rl.validate_dcp_expands());
    LEAP_RETURN_IF_ERROR(c.sampler.validate());
    // An fp32 export of a model whose matrices are bf16 would write their rounding as if it
    // were fp32 (the exact masters are in the checkpoints' rank-state files).
    if (c.train.mode == "sft" && !c.sft.save_to.empty() && c.sft.save_dtype == "f32" &&
        c.optim.masters_in_optimizer())
      return invalid_input(
          "option 'sft.save_dtype' = f32 with 'optim.master_weights' = optimizer: the model's "
          "matrices are bf16 (the fp32 masters are the optimizer's, in each checkpoint's "
          "optimizer-rank*.safetensors), so an fp32 export would only widen them; set "
          "--sft.save_dtype bf16, or --optim.master_weights replica");
    return c.optim.validate();
  };
  if (int rc = parse_or_exit("train", "[--config FILE.ini] [--section.key=value ...]", args, opts, validate); rc >= 0)
    return rc;
  // Before MPI_Init: a USR1 that Slurm sends while the ranks start must not kill one. From here
  // SIGUSR1/SIGTERM stop an RL run at the next step boundary.
  const StopSignal& stop = StopSignal::install();
  // FUNNELED: with rl.pipeline = stream rank 0 generates on a second thread, which never calls MPI.
  int provided = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  if (provided < MPI_THREAD_FUNNELED && c.rl.rl.pipeline == "stream") {
    MPI_Finalize();
    return report_error("train", invalid_input("this MPI library does not offer MPI_THREAD_FUNNELED, which "
                                               "rl.pipeline = stream needs (rank 0 generates on a second thread): "
                                               "set rl.pipeline = sync"));
  }
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  LogLevel level = LogLevel::kInfo;
  parse_log_level(c.app.run.log_level, &level);
  Logger log(world_rank, c.app.run.log_all_ranks, level);

  // ---- layout ------------------------------------------------------------------------------
  auto topo = lay_out_ranks(c, log);
  if (!topo) return finish_ranks(topo.status(), log);
  const mpi::Role role = topo->self().role;
  const bool in_process_sandbox = topo->count(mpi::Role::kSandbox) == 0;

  // ---- engines -----------------------------------------------------------------------------
  auto suite = tasks::load_suite(c.tasks.suite);
  Status setup = suite.status();
  PolicyState policy;
  std::unique_ptr<mpi::SandboxEngine> sandbox;
  const int threads = threads_per_rank(c, *topo);
  const bool sft = c.train.mode == "sft";
  if (role == mpi::Role::kPolicy) setup = build_policy(c, threads, *topo, setup, &policy, PolicyUse::kTrain);
  if (setup && role == mpi::Role::kPolicy && topo->is_coordinator()) log.info("policy: {}", describe_policy_state(policy));
  // The KL reference is taken before any checkpoint is loaded: by default the initial weights.
  if (setup && role == mpi::Role::kPolicy && !sft) setup = add_kl_reference(c, &policy);
  if (setup && policy.reference && topo->is_coordinator())
    log.info("KL to the reference {} (hash {}), beta {}: one more copy of the weights ({}, {:.1f} MiB a "
             "policy rank{}), one more forward per micro-batch",
             policy.reference->source(), policy.reference->hash(), c.rl.rl.kl_beta,
             model::reference_dtype_name(policy.reference->dtype()),
             static_cast<double>(policy.reference->backend_floats()) * sizeof(float) / (1 << 20),
             policy.model->backend().host_memory() ? "" : " and the GEMMs' bf16 copies");
  if (setup && !sft && topo->is_coordinator())
    log.info("each policy rank decodes up to {} sequences at a time (sampler.batch_seqs), prefills and "
             "trains {} at a time (train.micro_batch_seqs)",
             c.sampler.batch_seqs > 0 ? c.sampler.batch_seqs : c.train.micro_batch_seqs, c.train.micro_batch_seqs);
  if (setup && (role == mpi::Role::kSandbox || (topo->is_coordinator() && in_process_sandbox))) {
    auto engine = mpi::SandboxEngine::start(*suite, c.sandbox);
    if (engine) sandbox = std::move(*engine);
    else setup = engine.status().with_context("starting the sandbox workers");
  }
  // Resuming: every policy rank loads the checkpoint's model and optimizer; rank 0 also its state.
  // All ranks agree that this worked before rank 0 touches the trajectory file, so a bad
  // checkpoint leaves the run exactly as it was.
  nlohmann::json resume_state;
  {
    // Rank 0 chooses the checkpoint and tells the others (a collective: every rank comes here).
    auto dir = mpi::from_root(world_rank == 0 ? resume_dir(c) : Expected<std::string>(std::string()),
                              MPI_COMM_WORLD);
    if (setup) setup = dir.status();
    if (setup && !dir->empty() && role == mpi::Role::kPolicy) {
      // Under ZeRO each policy rank reads the weights of its own shard only (its own rank-state
      // file when the rank count is the same): the all-gather below fills in the rest.
      auto state = io::load_checkpoint(*dir, *policy.model, *policy.optimizer, policy.zero != nullptr);
      if (state) resume_state = std::move(*state);
      else setup = state.status().with_context("resuming from " + *dir);
      if (setup) setup = check_checkpoint_mode(resume_state, *dir, c.train.mode);
      if (setup) setup = check_checkpoint_seed(resume_state, *dir, c.app.run.seed);
      if (setup) setup = check_kl_reference(resume_state, *dir, policy.reference.get(), log);
      if (setup && c.train.mode == "rl") setup = check_dcp_state(resume_state, *dir, c.rl);
      if (setup && topo->is_coordinator()) log.info("resuming from {} (step {})", *dir, resume_state["step"].get<int64_t>());
    }
  }
  if (setup && topo->is_coordinator()) setup = build_prompt_format(c, resume_state, &policy, log);
  if (setup && topo->is_coordinator()) setup = check_train_setup(c, *suite, policy, log);
  setup = mpi::agree(setup, MPI_COMM_WORLD);
  // Every policy rank resumed (the agreement says so): the shards' weights to every rank, the
  // all-gather each ZeRO optimizer step ends with.
  if (setup && role == mpi::Role::kPolicy && !resume_state.is_null() && policy.zero)
    mpi::allgather_weights(*policy.model, *policy.zero, *policy.shard_comm);
  // The branch a --resume DIR of an earlier checkpoint leaves: its later checkpoints go aside,
  // before the trajectory file is cut back to its step, so that a failure between the two never
  // leaves `latest` naming a step the file no longer holds.
  std::vector<std::string> set_aside;
  if (setup && topo->is_coordinator() && !resume_state.is_null()) {
    auto moved = io::set_aside_newer_checkpoints(c.app.run.out_dir, resume_state["step"].get<int64_t>());
    if (!moved) setup = moved.status();
    else set_aside = *moved;
    for (const auto& dir : set_aside)
      log.warn("moved a later checkpoint aside as {}: this run continues from step {}, and --resume latest "
               "would otherwise pick the abandoned branch (remove it when it is no longer needed)",
               dir, resume_state["step"].get<int64_t>());
  }
  std::unique_ptr<io::TrajectoryFile> out;
  if (setup && topo->is_coordinator() && !sft) {
    std::error_code ec;
    fs::create_directories(c.app.run.out_dir, ec);
    io::SwmrMode swmr = io::SwmrMode::kAuto;
    io::parse_swmr_mode(c.train.swmr, &swmr);
    std::vector<std::string> ids;
    for (const auto& t : suite->tasks) ids.push_back(t.id);
    const std::string path = c.app.run.out_dir + "/trajectories.h5";
    const std::string fingerprint = run_fingerprint(c, policy.model->config());
    if (resume_state.is_null() && c.train.resume == "auto") setup = set_aside_unresumable(path, log);
    if (setup) {
      // On resume, rows past the checkpoint's step are cut first: each step is in the file once.
      // A resumed run whose file is gone (moved aside, say, when it lacked the checkpoint's
      // steps) starts a new one after the checkpoint's step, and says so.
      const io::TrajectoryMeta meta{opts.to_ini(), LEAP_VERSION, LEAP_GIT_COMMIT, fingerprint, ids, ""};
      const bool fresh = resume_state.is_null() || !fs::exists(path);
      const int64_t from = resume_state.is_null() ? 0 : resume_state["step"].get<int64_t>() + 1;
      if (fresh && from > 0)
        log.warn("{} does not exist: this resumed run writes a new trajectory file from step {} (the rows of "
                 "earlier steps are wherever the old file went)",
                 path, from);
      auto file = fresh ? io::TrajectoryFile::create(path, meta, swmr, from)
                        : io::TrajectoryFile::resume(path, meta, from - 1, swmr);
      if (file) out = std::move(*file);
      else setup = file.status();
      // A refused resume leaves the run as it was: the later checkpoints come back.
      if (!file && !set_aside.empty()) {
        if (Status back = io::bring_back_set_aside(set_aside); !back) log.error("{}", back.message());
        else log.warn("the resume was refused: the later checkpoints are back in place");
      }
    }
  }
  setup = mpi::agree(setup, MPI_COMM_WORLD);
  if (!setup) {
    mpi::free_topology(&*topo);
    return finish_ranks(setup, log);
  }

  // ---- the run -----------------------------------------------------------------------------
  Status result;
  bool stopped_early = false, material_refused = false;
  const int64_t budget = policy.model ? mpi::prompt_budget(policy.model->config().max_position_embeddings,
                                                           c.sampler.max_new_tokens)
                                      : 0;
  if (sft) {
    result = run_sft({c, *topo, policy, sandbox.get(), resume_state, budget, log, stop, &stopped_early,
                      &material_refused});
  } else if (topo->is_coordinator()) {
    result = run_rl_coordinator(
        {c, *topo, *suite, policy, sandbox.get(), out.get(), resume_state, budget, log, stop, &stopped_early});
  } else if (role == mpi::Role::kPolicy) {
    result = mpi::serve_policy(*topo, *policy.replica);
  } else {
    result = mpi::serve_sandbox(*topo, *sandbox);
  }
  // An empty SFT material is bad input found on rank 0 (every policy rank returns the refusal
  // together): rank 0 says why and every rank exits 2. Anything else aborts the job.
  if (!result.is_ok() && !material_refused) LEAP_FATAL(result.message());
  if (material_refused && topo->is_coordinator()) log.error("{}", result.message());
  // Every rank exits as rank 0 decided: 2 for a refused material, 75 (EX_TEMPFAIL) for a run
  // stopped early by a signal, which the jobscripts requeue, 0 for a finished one.
  int code = material_refused ? 2 : stopped_early ? kExitStoppedEarly : 0;
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  mpi::free_topology(&*topo);
  MPI_Finalize();
  return code;
}

}  // namespace leap::app
