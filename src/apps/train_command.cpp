// `leap train`: the MPI training program. Parses the config on every rank before MPI starts (a
// bad config exits 2 everywhere, with nothing written), lays out the ranks, builds each rank's
// engines, agrees across ranks that setup worked, then runs the RL steps: rank 0 coordinates,
// the other policy ranks serve rollouts and training, the sandbox ranks serve verification.
#include <mpi.h>

#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>

#include "apps/app_options.h"
#include "apps/subcommands.h"
#include "apps/train_options.h"
#include "apps/train_progress.h"
#include "backend/cpu_backend.h"
#include "common/check.h"
#include "cuda/device_probe.h"
#include "io/checkpoint_dir.h"
#include "io/trajectory_file.h"
#include "leap/version.h"
#include "model/byte_tokenizer.h"
#include "model/checkpoint.h"
#include "model/model_options.h"
#include "mpi/agree.h"
#include "mpi/coordinator.h"
#include "mpi/policy_replica.h"
#include "mpi/sandbox_engine.h"
#include "mpi/sft_trainer.h"
#include "rl/rl_config.h"
#include "sandbox/sandbox_config.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace leap::app {

namespace {

struct TrainConfig {
  AppOptions app;
  TrainOptions train;
  tasks::TasksConfig tasks;
  model::ModelOptions model;
  model::SamplerConfig sampler;
  model::OptimConfig optim;
  rl::RlSections rl;
  sandbox::SandboxConfig sandbox;
  mpi::SftOptions sft;
  void declare(OptionSet& opts) {
    app.declare(opts);
    train.declare(opts);
    tasks.declare(opts);
    model.declare(opts);
    sampler.declare(opts);
    optim.declare(opts);
    rl.declare(opts);
    sandbox.declare(opts);
    sft.declare(opts);
  }
};

// What a policy rank holds: the model and everything that trains or samples it.
struct PolicyState {
  std::unique_ptr<backend::CpuBackend> backend;
  std::unique_ptr<model::Transformer> model;
  model::ByteTokenizer tokenizer;
  std::unique_ptr<model::AdamW> optimizer;
  std::unique_ptr<mpi::PolicyReplica> replica;
};

Status build_policy(const TrainConfig& c, int threads, PolicyState* p) {
  if (c.model.path.empty())
    return invalid_input("model.path is empty: give the policy folder (config.json + model.safetensors), "
                         "e.g. --model models/demo");
  p->backend = std::make_unique<backend::CpuBackend>(threads);
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
  mpi::PolicyReplicaOptions ro;
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
                               log);
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
  if (c.app.run.backend == "cuda")
    return finish(mpi::agree(unsupported("backend.name = cuda is not built in this version of leap: use cpu"),
                             MPI_COMM_WORLD), log);
  auto topo = mpi::make_topology(MPI_COMM_WORLD, c.app.mpi, dev->count, false);
  if (!topo) return finish(topo.status(), log);
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
  if (setup && role == mpi::Role::kPolicy) setup = build_policy(c, threads, &policy);
  if (setup && (role == mpi::Role::kSandbox || (topo->is_coordinator() && in_process_sandbox))) {
    auto engine = mpi::SandboxEngine::start(*suite, c.sandbox);
    if (engine) sandbox = std::move(*engine);
    else setup = engine.status().with_context("starting the sandbox workers");
  }
  const bool sft = c.train.mode == "sft";
  // Resuming: every policy rank loads the checkpoint's model and optimizer; rank 0 also its state.
  nlohmann::json resume_state;
  if (setup && !sft && !c.train.resume.empty()) {
    auto dir = c.train.resume == "latest" ? io::latest_checkpoint(c.app.run.out_dir) : Expected<std::string>(c.train.resume);
    setup = dir.status();
    if (setup && role == mpi::Role::kPolicy) {
      auto state = io::load_checkpoint(*dir, *policy.model, *policy.optimizer);
      if (state) resume_state = std::move(*state);
      else setup = state.status().with_context("resuming from " + *dir);
      if (setup && topo->is_coordinator()) log.info("resuming from {} (step {})", *dir, resume_state["step"].get<int64_t>());
    }
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
    // On resume, rows past the checkpoint's step are cut first: each step is in the file once.
    auto file = resume_state.is_null()
                    ? io::TrajectoryFile::create(path, {opts.to_ini(), LEAP_VERSION, LEAP_GIT_COMMIT, fingerprint, ids}, swmr)
                    : io::TrajectoryFile::resume(path, fingerprint, resume_state["step"].get<int64_t>(), swmr);
    if (file) out = std::move(*file);
    else setup = file.status();
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
    mpi::CoordinatorOptions co;
    co.batch_tasks = c.train.batch_tasks;
    co.check_replicas_every = c.train.check_replicas_every;
    co.prompt_budget = budget;
    mpi::Coordinator coord(*topo, *suite, c.rl, co, static_cast<uint64_t>(c.app.run.seed), *policy.replica,
                           sandbox.get(), log);
    int start_step = 0;
    if (!resume_state.is_null()) {
      start_step = resume_state["step"].get<int>() + 1;
      result = coord.dcp().load_state_json(resume_state.value("dcp", nlohmann::json()));
      const auto& ts = resume_state.value("task_sampler", nlohmann::json::object());
      coord.sampler().set_state({ts.value("epoch", int64_t{0}), ts.value("position", int64_t{0})});
    }
    TrainProgress progress(c.train.steps - start_step, c.rl.rl.max_turns, log);
    log.info("training: {} steps of {} tasks x {} samples, up to {} turns, DCP {}; trajectories in {}",
             c.train.steps, c.train.batch_tasks, c.rl.rl.group_size, c.rl.rl.max_turns, c.rl.dcp.mode,
             c.app.run.out_dir + "/trajectories.h5");
    for (int step = start_step; step < c.train.steps && result.is_ok(); ++step) {
      auto report = coord.run_step(step, out.get());
      if (!report) {
        result = report.status();
        break;
      }
      progress.add(*report);
      const bool last = step + 1 == c.train.steps;
      if (last || (c.train.checkpoint_every > 0 && (step + 1) % c.train.checkpoint_every == 0)) {
        nlohmann::json state;
        state["dcp"] = coord.dcp().state_json();
        auto s = coord.sampler().state();
        state["task_sampler"] = {{"epoch", s.epoch}, {"position", s.position}};
        state["seed"] = c.app.run.seed;
        result = io::save_checkpoint(c.app.run.out_dir, step, *policy.model, *policy.optimizer, state,
                                     c.train.keep_checkpoints);
      }
    }
    if (!result.is_ok()) LEAP_FATAL("training stopped: " << result.message());  // aborts every rank
    coord.stop();
    if (out) result = out->close();
    progress.summary();
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
