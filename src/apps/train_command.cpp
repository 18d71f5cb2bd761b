// `leap train`: the MPI training program. Parses the config on every rank before MPI starts (a
// bad config exits 2 everywhere, with nothing written), lays out the ranks, builds each rank's
// engines, agrees across ranks that setup worked, then runs the RL steps: rank 0 coordinates,
// the other policy ranks serve rollouts and training, the sandbox ranks serve verification.
#include <mpi.h>

#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>

#include "apps/subcommands.h"
#include "apps/train_config.h"
#include "apps/train_rl_loop.h"
#include "common/check.h"
#include "common/stop_signal.h"
#include "cuda/device_probe.h"
#include "io/checkpoint_dir.h"
#include "io/trajectory_file.h"
#include "leap/version.h"
#include "model/checkpoint.h"
#include "mpi/agree.h"
#include "mpi/coordinator.h"
#include "mpi/sandbox_engine.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace leap::app {

namespace {

// The backend (backend.name, on this rank's GPU for cuda), the model and its optimizer.
Status build_model(const TrainConfig& c, int threads, int device, PolicyState* p) {
  if (c.model.path.empty())
    return invalid_input("model.path is empty: give the policy folder (config.json + model.safetensors), "
                         "e.g. --model models/demo");
  LEAP_ASSIGN_OR_RETURN(PolicyBackend be, make_policy_backend(c.app.run.backend, threads, device));
#ifdef LEAP_HAVE_CUDA
  p->cuda = std::move(be.cuda);
#endif
  p->backend = std::move(be.backend);
  if (c.train.random_init) {
    LEAP_ASSIGN_OR_RETURN(auto cfg, model::read_model_config(c.model.path + "/config.json"));
    p->model = std::make_unique<model::Transformer>(cfg, *p->backend);
    p->model->init_random(static_cast<uint64_t>(c.app.run.seed));
  } else {
    LEAP_ASSIGN_OR_RETURN(p->model, model::load_model(c.model.path, *p->backend));
  }
  if (p->model->config().vocab_size != p->tokenizer.vocab_size())
    return invalid_input(fmt::format("{}: vocab_size {} does not match the byte-level tokenizer ({} ids); this "
                                     "version of leap has only the byte-level tokenizer",
                                     c.model.path, p->model->config().vocab_size, p->tokenizer.vocab_size()));
  p->optimizer = std::make_unique<model::AdamW>(c.optim, *p->model);
  return Status::ok();
}

// Collective over the policy ranks (`ready` is what came before on this rank): the model, then,
// once every policy rank has one, the gradient reducer (NCCL's setup is collective), then the
// replica that uses both.
Status build_policy(const TrainConfig& c, int threads, const mpi::Topology& topo, Status ready, PolicyState* p) {
  if (ready) ready = build_model(c, threads, topo.self().device, p);
  LEAP_RETURN_IF_ERROR(mpi::agree(ready, topo.role_comm));
  LEAP_ASSIGN_OR_RETURN(p->reducer, mpi::make_grad_reducer(*p->backend, topo.role_comm, c.app.run.nccl_timeout_s));
  mpi::PolicyReplicaOptions ro;
  ro.reducer = p->reducer.get();
  ro.sampler = c.sampler;
  if (ro.sampler.stop.empty())
    ro.sampler.stop = std::string(rl::stop_string(rl::parse_chat_template(c.rl.prompt.chat_template)));
  ro.loss = c.rl.rl.loss_options(c.sampler.max_new_tokens);
  ro.micro_batch_seqs = c.train.micro_batch_seqs;
  p->replica = std::make_unique<mpi::PolicyReplica>(*p->model, p->tokenizer, *p->optimizer, ro);
  return Status::ok();
}

std::string run_fingerprint(const TrainConfig& c, const model::ModelConfig& m) {
  return fmt::format("seed={} suite={} G={} B={} max_turns={} model={}x{}x{}", c.app.run.seed, c.tasks.suite,
                     c.rl.rl.group_size, c.train.batch_tasks, c.rl.rl.max_turns, m.num_hidden_layers, m.hidden_size,
                     m.vocab_size);
}

// SFT: rank 0 builds the material (verifying through the sandbox ranks or in-process) while the
// other ranks serve; then every policy rank gets the material and trains; rank 0 saves.
Status run_sft(const TrainConfig& c, const mpi::Topology& topo, PolicyState& policy, mpi::VerifyEngine* local_sandbox,
               int64_t prompt_budget, const Logger& log) {
  mpi::TrainWork material;
  if (topo.is_coordinator()) {
    mpi::JobDispatcher dispatcher(topo, local_sandbox, 1, log);
    rl::PromptBuilder prompts(c.rl.prompt.options(prompt_budget),
                              [&](std::string_view t) { return policy.tokenizer.encode(t, true).size(); });
    auto suite = tasks::load_suite(c.tasks.suite);
    if (!suite) return suite.status();
    mpi::SftMaterialStats stats;
    auto examples = mpi::build_sft_material(*suite, prompts, policy.tokenizer, dispatcher, c.sft,
                                            static_cast<uint64_t>(c.app.run.seed),
                                            static_cast<size_t>(policy.model->config().max_position_embeddings), &stats);
    if (!examples) LEAP_FATAL("building the SFT material: " << examples.status().message());
    log.info("sft material: {} train tasks -> {} references, {} verified rewrites ({} dropped), {} repair turns "
             "({} dropped), {} longer than the context",
             stats.tasks, stats.references, stats.rewrites, stats.rewrites_dropped, stats.repairs,
             stats.repairs_dropped, stats.too_long);
    if (stats.references < stats.tasks)
      log.warn("{} task(s) have no example that fits the context: raise max_position_embeddings or shorten prompts",
               stats.tasks - stats.references);
    material.samples = std::move(*examples);
    mpi::Control stop{mpi::Control::Kind::kStop, 0, 0};
    mpi::broadcast(stop, 0, topo.world);
  } else if (topo.self().role == mpi::Role::kPolicy) {
    LEAP_RETURN_IF_ERROR(mpi::serve_policy(topo, *policy.replica));
  } else {
    return mpi::serve_sandbox(topo, *local_sandbox);
  }
  mpi::broadcast(material, 0, topo.role_comm);
  auto report = mpi::train_sft(*policy.model, *policy.optimizer, material.samples, c.train.steps,
                               c.train.micro_batch_seqs, c.sft, static_cast<uint64_t>(c.app.run.seed), topo.role_comm,
                               log, policy.reducer.get());
  if (!topo.is_coordinator()) return Status::ok();
  log.info("sft done: {} steps, loss {:.4f} -> {:.4f}", report.steps, report.first_loss, report.last_loss);
  LEAP_RETURN_IF_ERROR(io::save_checkpoint(c.app.run.out_dir, report.steps - 1, *policy.model, *policy.optimizer,
                                           nlohmann::json{{"mode", "sft"}, {"seed", c.app.run.seed}},
                                           c.train.keep_checkpoints));
  if (!c.sft.save_to.empty()) {
    LEAP_RETURN_IF_ERROR(model::save_model(c.sft.save_to, *policy.model));
    log.info("policy written to {}", c.sft.save_to);
  }
  return Status::ok();
}

// The checkpoint a run continues from: "" for a fresh run. `auto` (what a requeued job runs)
// resumes when the run has a checkpoint and starts fresh when it has none.
Expected<std::string> resume_dir(const TrainConfig& c) {
  const std::string& r = c.train.resume;
  if (r.empty()) return std::string();
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

// Ends the run with a status every rank agrees on: rank 0 says it once, every rank exits with
// its code.
int finish(const Status& st, const Logger& log) {
  if (!st.is_ok() && log.rank() == 0) log.error("{}", st.message());
  MPI_Finalize();
  return st.exit_code();
}

}  // namespace

int run_train(const std::vector<std::string>& args) {
  OptionSet opts;
  TrainConfig c;
  c.declare(opts);
  if (int rc = parse_or_exit("train", "[--config FILE.ini] [--section.key=value ...]", args, opts); rc >= 0)
    return rc;
  if (Status st = c.rl.validate(); !st) {
    std::fprintf(stderr, "leap train: error: %s\n", st.message().c_str());
    return st.exit_code();
  }
  MPI_CHECK(MPI_Init(nullptr, nullptr));
  // From here SIGUSR1/SIGTERM no longer kill a rank: RL runs stop at the next step boundary.
  StopSignal::install();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  LogLevel level = LogLevel::kInfo;
  parse_log_level(c.app.run.log_level, &level);
  Logger log(world_rank, c.app.run.log_all_ranks, level);

  // ---- layout ------------------------------------------------------------------------------
  auto dev = cuda::probe_devices();
  if (Status st = mpi::agree(dev.status(), MPI_COMM_WORLD); !st) return finish(st, log);
  auto device = sandbox::resolve_device(c.sandbox.device, dev->count, dev->reason);
  if (Status st = mpi::agree(device.status(), MPI_COMM_WORLD); !st) return finish(st, log);
  c.sandbox.device = *device;
  c.app.mpi.sandbox_device = *device;
  const bool cuda_policy = c.app.run.backend == "cuda";
  if (Status st = mpi::agree(check_backend_choice(c.app.run.backend, *dev), MPI_COMM_WORLD); !st)
    return finish(st, log);
  auto topo = mpi::make_topology(MPI_COMM_WORLD, c.app.mpi, dev->count, cuda_policy);
  if (!topo) return finish(topo.status(), log);
  if (cuda_policy) {
    // NCCL cannot put two ranks on one GPU: one GPU per policy rank on every node.
    int policy_here = 0;
    for (const auto& r : topo->ranks) policy_here += r.host == topo->self().host && r.role == mpi::Role::kPolicy;
    Status st = policy_here <= dev->count
                    ? Status::ok()
                    : invalid_input(fmt::format("backend.name = cuda puts {} policy ranks on {} with {} GPU(s); NCCL "
                                                "needs one GPU per policy rank: start fewer ranks per node or set "
                                                "mpi.sandbox_per_node so the rest verify",
                                                policy_here, topo->self().host, dev->count));
    if (st = mpi::agree(st, MPI_COMM_WORLD); !st) return finish(st, log);
  }
  log.info("leap {} (commit {}); {}", LEAP_VERSION, LEAP_GIT_COMMIT, cuda::describe(*dev));
  log.info("{}", mpi::format_layout(*topo));
  const mpi::Role role = topo->self().role;
  const bool in_process_sandbox = topo->count(mpi::Role::kSandbox) == 0;

  // ---- engines -----------------------------------------------------------------------------
  auto suite = tasks::load_suite(c.tasks.suite);
  Status setup = suite.status();
  PolicyState policy;
  std::unique_ptr<mpi::SandboxEngine> sandbox;
  // Threads per rank: what was asked, or this node's cores shared among its ranks.
  int ranks_here = 0;
  for (const auto& r : topo->ranks) ranks_here += r.host == topo->self().host;
  const int threads = c.app.run.threads > 0
                          ? c.app.run.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, ranks_here));
  if (role == mpi::Role::kPolicy) setup = build_policy(c, threads, *topo, setup, &policy);
  if (setup && (role == mpi::Role::kSandbox || (topo->is_coordinator() && in_process_sandbox))) {
    auto engine = mpi::SandboxEngine::start(*suite, c.sandbox);
    if (engine) sandbox = std::move(*engine);
    else setup = engine.status().with_context("starting the sandbox workers");
  }
  const bool sft = c.train.mode == "sft";
  // Resuming: every policy rank loads the checkpoint's model and optimizer; rank 0 also its state.
  // All ranks agree that this worked before rank 0 touches the trajectory file, so a bad
  // checkpoint leaves the run exactly as it was.
  nlohmann::json resume_state;
  if (setup && !sft) {
    auto dir = resume_dir(c);
    setup = dir.status();
    if (setup && !dir->empty() && role == mpi::Role::kPolicy) {
      auto state = io::load_checkpoint(*dir, *policy.model, *policy.optimizer);
      if (state) resume_state = std::move(*state);
      else setup = state.status().with_context("resuming from " + *dir);
      if (setup && topo->is_coordinator()) log.info("resuming from {} (step {})", *dir, resume_state["step"].get<int64_t>());
    }
  }
  setup = mpi::agree(setup, MPI_COMM_WORLD);
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
      auto file = resume_state.is_null()
                      ? io::TrajectoryFile::create(path, {opts.to_ini(), LEAP_VERSION, LEAP_GIT_COMMIT, fingerprint, ids}, swmr)
                      : io::TrajectoryFile::resume(path, fingerprint, resume_state["step"].get<int64_t>(), swmr);
      if (file) out = std::move(*file);
      else setup = file.status();
    }
  }
  setup = mpi::agree(setup, MPI_COMM_WORLD);
  if (!setup) {
    mpi::free_topology(&*topo);
    return finish(setup, log);
  }

  // ---- the run -----------------------------------------------------------------------------
  Status result;
  const int64_t budget = policy.model ? mpi::prompt_budget(policy.model->config().max_position_embeddings,
                                                           c.sampler.max_new_tokens)
                                      : 0;
  if (sft) {
    result = run_sft(c, *topo, policy, sandbox.get(), budget, log);
  } else if (topo->is_coordinator()) {
    result = run_rl_coordinator({c, *topo, *suite, policy, sandbox.get(), out.get(), resume_state, budget, log});
  } else if (role == mpi::Role::kPolicy) {
    result = mpi::serve_policy(*topo, *policy.replica);
  } else {
    result = mpi::serve_sandbox(*topo, *sandbox);
  }
  if (!result.is_ok()) LEAP_FATAL(result.message());
  mpi::free_topology(&*topo);
  MPI_Finalize();
  return 0;
}

}  // namespace leap::app
