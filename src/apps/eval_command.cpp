// `leap eval`: a policy on a suite's tasks (heldout, train or all), n samples each with up to
// `eval.turns` turns and the sandbox's feedback between them, over the same ranks as training
// (policy ranks sample, sandbox ranks verify; one rank does both in-process). Rank 0 reports
// progress, prints the table and writes the JSON atomically. It reads the same config files as
// `leap train` (a run's config names its policy, prompt format, sampler and sandbox), so it
// declares the same sections; the training-only ones are accepted and unused.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/eval_options.h"
#include "apps/eval_report.h"
#include "apps/rank_setup.h"
#include "apps/subcommands.h"
#include "apps/train_progress.h"
#include "common/check.h"
#include "common/fs_util.h"
#include "mpi/agree.h"
#include "mpi/coordinator.h"
#include "mpi/evaluator.h"
#include "mpi/sandbox_engine.h"

namespace fs = std::filesystem;

namespace leap::app {

namespace {

struct EvalConfig {
  TrainConfig run;
  EvalOptions eval;
  void declare(OptionSet& opts) {
    run.declare(opts);
    eval.declare(opts);
  }
};

// Suite indices of the tasks of the chosen split, in file order.
Expected<std::vector<int>> select_split(const tasks::Suite& suite, const std::string& split) {
  std::vector<int> out;
  for (size_t i = 0; i < suite.tasks.size(); ++i)
    if (split == "all" || split == tasks::split_name(suite.tasks[i].split))
      out.push_back(static_cast<int>(i));
  if (out.empty())
    return invalid_input(suite.path + " has no " + split +
                         " tasks: choose another --eval.split (train, heldout, all) "
                         "or another --suite");
  return out;
}

// The JSON goes into an existing folder; checked before the run, not after it.
// Rank 0: the batches, a progress line after each, then the report.
Status evaluate(const EvalConfig& c, const std::string& config_ini, const mpi::Topology& topo,
                const tasks::Suite& suite, const std::vector<int>& tasks, PolicyState& policy,
                mpi::VerifyEngine* local_sandbox, const rl::EvalSpec& spec, const Logger& log) {
  mpi::EvaluatorOptions eo;
  eo.samples = c.eval.samples;
  eo.turns = c.eval.turns;
  eo.prompt_budget = mpi::prompt_budget(policy.model->config().max_position_embeddings,
                                        c.run.sampler.max_new_tokens);
  mpi::Evaluator evaluator(topo, suite, c.run.rl.prompt, eo,
                           static_cast<uint64_t>(c.run.app.run.seed), *policy.replica,
                           *policy.prompt_format, local_sandbox, log);
  log.info("eval: {} {} tasks of {} x {} samples, up to {} turns", tasks.size(), c.eval.split,
           suite.path, c.eval.samples, c.eval.turns);
  std::vector<rl::EvalRecord> records;
  mpi::TurnTimes times;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t tokens = 0, turn1 = 0, turn1_ok = 0;
  const size_t per_batch = static_cast<size_t>(c.eval.batch_tasks);
  for (size_t start = 0, batch = 0; start < tasks.size(); start += per_batch, ++batch) {
    std::vector<int> part(
        tasks.begin() + static_cast<long>(start),
        tasks.begin() + static_cast<long>(std::min(tasks.size(), start + per_batch)));
    auto got = evaluator.run_batch(static_cast<int64_t>(batch), part, &times);
    if (!got) return got.status();  // fatal for every rank: the caller aborts
    for (const auto& r : *got) {
      tokens += r.completion_tokens;
      if (r.turn == 1) turn1 += 1, turn1_ok += r.verdict == sandbox::Verdict::kOk;
    }
    records.insert(records.end(), got->begin(), got->end());
    const size_t done = start + part.size();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log.info(
        "eval: {}/{} tasks | turn-1 pass so far {:.2f} | {:.0f} tok/s | gen {:.0f}s sandbox "
        "{:.0f}s | ETA {}",
        done, tasks.size(),
        turn1 ? static_cast<double>(turn1_ok) / static_cast<double>(turn1) : 0.0,
        times.gen_s > 0 ? static_cast<double>(tokens) / times.gen_s : 0.0, times.gen_s,
        times.sandbox_s,
        format_duration(elapsed / static_cast<double>(done) *
                        static_cast<double>(tasks.size() - done)));
  }
  evaluator.stop();

  EvalRunInfo info;
  info.model = c.run.model.path;
  info.suite = suite.path;
  info.split = c.eval.split;
  info.device = c.run.sandbox.device;
  info.seed = c.run.app.run.seed;
  info.batch_tasks = c.eval.batch_tasks;
  info.temperature = c.run.sampler.temperature;
  info.top_p = c.run.sampler.top_p;
  info.max_new_tokens = c.run.sampler.max_new_tokens;
  info.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info.config_ini = config_ini;
  EvalBreakdown b = break_down(suite, tasks, records, spec);
  std::printf("\n%s", eval_table(suite, b, spec, info).c_str());
  std::fflush(stdout);
  if (c.eval.output.empty()) return Status::ok();
  const std::string text = eval_json(suite, b, records, spec, info)
                               .dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  LEAP_RETURN_IF_ERROR(write_file_atomic(c.eval.output, text + "\n"));
  log.info("eval: report written to {}", c.eval.output);
  return Status::ok();
}

}  // namespace

int run_eval(const std::vector<std::string>& args) {
  OptionSet opts;
  EvalConfig c;
  c.declare(opts);
  rl::EvalSpec spec;
  const auto validate = [&c, &spec]() -> Status {
    LEAP_RETURN_IF_ERROR(c.eval.validate(&spec.ks, &spec.ps));
    LEAP_RETURN_IF_ERROR(c.run.rl.validate());
    LEAP_RETURN_IF_ERROR(c.run.sampler.validate());
    // Its latency would be reported as if GPU trials had taken it: never in an evaluation.
    if (c.run.sandbox.simulated_exec_ms > 0)
      return invalid_input(fmt::format("option 'sandbox.simulated_exec_ms' = {} is for throughput benchmarks of "
                                       "leap train only; leap eval refuses it: remove it from the config or the "
                                       "command line",
                                       c.run.sandbox.simulated_exec_ms));
    return Status::ok();
  };
  if (int rc =
          parse_or_exit("eval",
                        "--model DIR --suite FILE [--split heldout|train|all] [--eval.samples N] "
                        "[--config FILE.ini] [--section.key=value ...]",
                        args, opts, validate);
      rc >= 0)
    return rc;
  spec.samples = c.eval.samples;
  spec.turns = c.eval.turns;
  MPI_CHECK(MPI_Init(nullptr, nullptr));
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  LogLevel level = LogLevel::kInfo;
  parse_log_level(c.run.app.run.log_level, &level);
  Logger log(world_rank, c.run.app.run.log_all_ranks, level);

  auto topo = lay_out_ranks(c.run, log);
  if (!topo) return finish_ranks(topo.status(), log);
  // On rank 0 c.run.sandbox.device is its own (in-process) device, not the sandbox ranks'.
  spec.timed = mpi::every_candidate_timed(topo->ranks, c.run.sandbox.device);
  if (!spec.timed && topo->count(mpi::Role::kSandbox) > 0) {
    bool some_timed = false;
    for (const auto& r : topo->ranks) some_timed |= r.role == mpi::Role::kSandbox && r.device >= 0;
    if (some_timed)
      log.warn("some sandbox ranks have no GPU and verify in the PTX interpreter, untimed: fast_p is not reported "
               "(it would depend on which rank judged which task); give every sandbox rank a GPU");
  }
  const mpi::Role role = topo->self().role;
  const bool in_process_sandbox = topo->count(mpi::Role::kSandbox) == 0;

  // Every rank loads the suite and selects the split, so a bad one stops them all alike.
  auto suite = tasks::load_suite(c.run.tasks.suite);
  Status setup = suite.status();
  std::vector<int> tasks;
  if (setup) {
    auto chosen = select_split(*suite, c.eval.split);
    if (chosen)
      tasks = std::move(*chosen);
    else
      setup = chosen.status();
  }
  if (setup && topo->is_coordinator()) setup = check_output_folder(c.eval.output, "--eval.output");
  PolicyState policy;
  std::unique_ptr<mpi::SandboxEngine> sandbox;
  if (role == mpi::Role::kPolicy)
    setup = build_policy(c.run, threads_per_rank(c.run, *topo), *topo, setup, &policy, PolicyUse::kSample);
  // What the policy ranks hold, read from what was built (rank 0 is a policy rank).
  if (setup && role == mpi::Role::kPolicy) log.info("policy: {}", describe_policy_state(policy));
  // A checkpoint's state.json pins the date its run's prompts printed (prompt_now).
  if (setup && topo->is_coordinator()) {
    std::ifstream state_file(c.run.model.path + "/state.json");
    nlohmann::json state =
        state_file ? nlohmann::json::parse(state_file, nullptr, false) : nlohmann::json();
    setup = build_prompt_format(c.run, state.is_discarded() ? nlohmann::json() : state, &policy, log);
    if (setup)
      setup = check_prompts_fit(c.run, policy, *suite, tasks, c.eval.split == "all" ? "tasks" : c.eval.split + " tasks",
                                log);
  }
  if (setup && (role == mpi::Role::kSandbox || (topo->is_coordinator() && in_process_sandbox))) {
    auto engine = mpi::SandboxEngine::start(*suite, c.run.sandbox);
    if (engine)
      sandbox = std::move(*engine);
    else
      setup = engine.status().with_context("starting the sandbox workers");
  }
  setup = mpi::agree(setup, MPI_COMM_WORLD);
  if (!setup) {
    mpi::free_topology(&*topo);
    return finish_ranks(setup, log);
  }

  Status result;
  if (topo->is_coordinator()) {
    result = evaluate(c, opts.to_ini(), *topo, *suite, tasks, policy, sandbox.get(), spec, log);
  } else if (role == mpi::Role::kPolicy) {
    result = mpi::serve_policy(*topo, *policy.replica);
  } else {
    result = mpi::serve_sandbox(*topo, *sandbox);
  }
  if (!result.is_ok()) LEAP_FATAL("eval stopped: " << result.message());  // aborts every rank
  mpi::free_topology(&*topo);
  MPI_Finalize();
  return 0;
}

}  // namespace leap::app
