// `leap analyze RUN.h5`: a run's trajectory file as tables (per step: pass rates by turn, DCP
// classes, sandbox jobs, reward statistics, token means, time split; verdict counts per step, per
// turn and overall; token-length quantiles), as text (default), JSON or CSV. Reads a running job
// too (SWMR): it shows the steps committed so far. The numbers come from io/run_summary.h, whose
// header defines each; text, JSON and CSV render the same Table cells, so they cannot disagree.
// Bad input (no file, not HDF5, not a LEAP run, damaged) is a message naming it and exit code 2.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "apps/subcommands.h"
#include "apps/table_render.h"
#include "common/fs_util.h"
#include "io/run_summary.h"
#include "io/trajectory_reader.h"

namespace leap::app {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kUsage =
    "RUN.h5|RUN_DIR [--format text|json|csv] [--table NAME] [--last N] [--output FILE]";

struct AnalyzeOptions {
  std::string file, format, table, output;
  int64_t last = 0;

  void declare(OptionSet& o) {
    o.add("analyze.file", &file, std::string(""),
          "The run's trajectories.h5, or its run folder (a bare argument fills this).",
          {.alias = "file"});
    o.add("analyze.format", &format, std::string("text"),
          "text: aligned tables; json: every table, for scripts; csv: one table (see --table).",
          {.choices = {"text", "json", "csv"}, .alias = "format"});
    o.add("analyze.table", &table, std::string("all"),
          "Which table to print: all, or one of run, steps, step_verdicts, verdicts, tokens. csv "
          "prints one "
          "table: steps unless another is named.",
          {.choices = {"all", "run", "steps", "step_verdicts", "verdicts", "tokens"},
           .alias = "table"});
    o.add("analyze.last", &last, int64_t{0},
          "Analyze only the last N committed steps (0: all); every table then covers those steps.",
          {.min = 0, .alias = "last"});
    o.add("analyze.output", &output, std::string(""),
          "Write to this file (atomically) instead of standard output.", {.alias = "output"});
  }
};

// A column and how to get its cell from a row: declared together so they cannot drift.
template <class Row>
struct Field {
  Column column;
  std::function<Cell(const Row&)> value;
};

template <class Row>
Table make_table(std::string name, std::string title, const std::vector<Field<Row>>& fields,
                 const std::vector<Row>& rows) {
  Table t{std::move(name), std::move(title), {}, {}};
  for (const auto& f : fields) t.columns.push_back(f.column);
  for (const auto& r : rows) {
    std::vector<Cell> cells;
    for (const auto& f : fields) cells.push_back(f.value(r));
    t.rows.push_back(std::move(cells));
  }
  return t;
}

double ratio(double part, double whole) {
  return whole > 0 ? part / whole : kNaN;
}

// The policy ranks' seconds in a step: busy + waiting on the sandbox + idle otherwise.
double policy_total(const io::StepRow& r) { return r.policy_busy_s + r.policy_wait_s + r.policy_idle_s; }

std::vector<std::string> verdict_names() {
  std::vector<std::string> out;
  for (int v = 0; v < sandbox::kVerdictCount; ++v)
    out.emplace_back(sandbox::verdict_name(static_cast<sandbox::Verdict>(v)));
  return out;
}

// One column per verdict, counting from `counts_of(row)`; all-zero columns are left out of text.
template <class Row>
void add_verdict_fields(std::vector<Field<Row>>* fields,
                        std::function<const io::VerdictCounts&(const Row&)> counts_of,
                        const std::string& block) {
  const auto names = verdict_names();
  fields->push_back({{"samples", "samples", -1, block}, [counts_of](const Row& r) {
                       int64_t n = 0;
                       for (int64_t c : counts_of(r)) n += c;
                       return Cell(n);
                     }});
  for (size_t v = 0; v < names.size(); ++v)
    fields->push_back({{names[v], names[v], -1, block, true},
                       [counts_of, v](const Row& r) { return Cell(counts_of(r)[v]); }});
}

Table steps_table(const io::RunSummary& s) {
  using S = io::StepSummary;
  std::vector<Field<S>> f = {
      {{"step", "step", -1, "pass rates"}, [](const S& r) { return Cell(r.row.step); }},
      {{"wall_s", "wall s", 1, "pass rates"}, [](const S& r) { return Cell(r.wall_s); }},
      {{"trajectories", "traj", -1, "pass rates"}, [](const S& r) { return Cell(r.trajectories); }},
      {{"void_trajectories", "void", -1, "pass rates"},
       [](const S& r) { return Cell(r.void_trajectories); }},
  };
  for (int k = 1; k <= s.turns; ++k) {
    const std::string name = k == 1 ? "pass_t1" : "pass_by_t" + std::to_string(k);
    const std::string title = k == 1 ? "t1" : "by t" + std::to_string(k);
    f.push_back({{name, title, 3, "pass rates"},
                 [k](const S& r) { return Cell(r.pass_by_turn[static_cast<size_t>(k - 1)]); }});
  }
  f.push_back({{"pass_final", "final", 3, "pass rates"},
               [](const S& r) { return Cell(r.pass_by_turn.back()); }});
  const std::string dcp = "DCP classes (groups) and sandbox jobs";
  const std::vector<Field<S>> rest = {
      {{"groups", "groups", -1, dcp}, [](const S& r) { return Cell(int64_t{r.row.n_groups}); }},
      {{"easy", "easy", -1, dcp}, [](const S& r) { return Cell(int64_t{r.row.n_easy}); }},
      {{"hopeless", "hopeless", -1, dcp},
       [](const S& r) { return Cell(int64_t{r.row.n_hopeless}); }},
      {{"expanded", "expanded", -1, dcp},
       [](const S& r) { return Cell(int64_t{r.row.n_expanded}); }},
      {{"dropped", "dropped", -1, dcp},
       [](const S& r) { return Cell(int64_t{r.row.n_dropped_groups}); }},
      {{"easy_frac", "easy %", 0, dcp, false, true},
       [](const S& r) { return Cell(ratio(r.row.n_easy, r.row.n_groups)); }},
      {{"hopeless_frac", "hopeless %", 0, dcp, false, true},
       [](const S& r) { return Cell(ratio(r.row.n_hopeless, r.row.n_groups)); }},
      {{"expanded_frac", "expanded %", 0, dcp, false, true},
       [](const S& r) { return Cell(ratio(r.row.n_expanded, r.row.n_groups)); }},
      {{"sandbox_jobs", "sandbox jobs", -1, dcp},
       [](const S& r) { return Cell(int64_t{r.row.n_sandbox_jobs}); }},
      {{"reward_mean", "reward mean", 3, "reward, tokens, loss"},
       [](const S& r) { return Cell(r.reward_mean); }},
      {{"reward_std", "reward std", 3, "reward, tokens, loss"},
       [](const S& r) { return Cell(r.reward_std); }},
      {{"mean_prompt_tokens", "prompt tok", 1, "reward, tokens, loss"},
       [](const S& r) { return Cell(r.mean_prompt_tokens); }},
      {{"mean_completion_tokens", "completion tok", 1, "reward, tokens, loss"},
       [](const S& r) { return Cell(r.mean_completion_tokens); }},
      {{"loss", "loss", 4, "reward, tokens, loss"}, [](const S& r) { return Cell(r.row.loss); }},
      {{"time_s", "step s", 2, "time split"}, [](const S& r) { return Cell(r.row.time_s); }},
      {{"gen_s", "gen s", 2, "time split"}, [](const S& r) { return Cell(r.row.gen_s); }},
      {{"sandbox_s", "sandbox s", 2, "time split"},
       [](const S& r) { return Cell(r.row.sandbox_s); }},
      {{"train_s", "train s", 2, "time split"}, [](const S& r) { return Cell(r.row.train_s); }},
      {{"gen_frac", "gen %", 0, "time split", false, true},
       [](const S& r) { return Cell(ratio(r.row.gen_s, r.row.time_s)); }},
      {{"sandbox_frac", "sandbox %", 0, "time split", false, true},
       [](const S& r) { return Cell(ratio(r.row.sandbox_s, r.row.time_s)); }},
      {{"train_frac", "train %", 0, "time split", false, true},
       [](const S& r) { return Cell(ratio(r.row.train_s, r.row.time_s)); }},
      {{"policy_wait_frac", "policy wait %", 0, "idle", false, true},
       [](const S& r) { return Cell(ratio(r.row.policy_wait_s, policy_total(r.row))); }},
      {{"policy_wait_before_drain_frac", "wait before drain %", 0, "idle", false, true},
       [](const S& r) { return Cell(ratio(r.row.policy_wait_s - r.row.policy_drain_s, policy_total(r.row))); }},
      {{"policy_idle_frac", "policy idle %", 0, "idle", false, true},
       [](const S& r) { return Cell(ratio(r.row.policy_idle_s, policy_total(r.row))); }},
      {{"sandbox_idle_frac", "sandbox idle %", 0, "idle", false, true},
       [](const S& r) { return Cell(ratio(r.row.sandbox_idle_s, r.row.sandbox_busy_s + r.row.sandbox_idle_s)); }},
  };
  f.insert(f.end(), rest.begin(), rest.end());
  return make_table(
      "steps",
      "per step (pass rates: fractions of the non-void trajectories that passed by that turn)", f,
      s.steps);
}

Table step_verdicts_table(const io::RunSummary& s) {
  using S = io::StepSummary;
  std::vector<Field<S>> f = {
      {{"step", "step", -1, ""}, [](const S& r) { return Cell(r.row.step); }}};
  add_verdict_fields<S>(
      &f, [](const S& r) -> const io::VerdictCounts& { return r.verdicts; }, "");
  return make_table("step_verdicts", "verdicts per step (turn-samples)", f, s.steps);
}

// Rows "all", "turn 1", "turn 2", ...
struct Scoped {
  std::string scope;
  io::VerdictCounts verdicts{};
  io::LengthStats lengths;
};

Table verdicts_table(const io::RunSummary& s) {
  std::vector<Scoped> rows = {{"all", s.verdicts, {}}};
  for (size_t t = 0; t < s.verdicts_by_turn.size(); ++t)
    rows.push_back({"turn " + std::to_string(t + 1), s.verdicts_by_turn[t], {}});
  std::vector<Field<Scoped>> f = {
      {{"scope", "scope", -1, ""}, [](const Scoped& r) { return Cell(r.scope); }}};
  add_verdict_fields<Scoped>(
      &f, [](const Scoped& r) -> const io::VerdictCounts& { return r.verdicts; }, "");
  return make_table("verdicts", "verdicts, overall and per turn (turn-samples)", f, rows);
}

Table tokens_table(const io::RunSummary& s) {
  std::vector<Scoped> rows = {{"prompt", {}, s.prompt_tokens},
                              {"completion", {}, s.completion_tokens}};
  for (size_t t = 0; t < s.completion_tokens_by_turn.size(); ++t)
    rows.push_back(
        {"completion turn " + std::to_string(t + 1), {}, s.completion_tokens_by_turn[t]});
  using R = Scoped;
  const std::vector<Field<R>> f = {
      {{"tokens", "tokens", -1, ""}, [](const R& r) { return Cell(r.scope); }},
      {{"count", "count", -1, ""}, [](const R& r) { return Cell(r.lengths.count); }},
      {{"mean", "mean", 1, ""}, [](const R& r) { return Cell(r.lengths.mean); }},
      {{"min", "min", 0, ""}, [](const R& r) { return Cell(r.lengths.min); }},
      {{"p10", "p10", 1, ""}, [](const R& r) { return Cell(r.lengths.p10); }},
      {{"p25", "p25", 1, ""}, [](const R& r) { return Cell(r.lengths.p25); }},
      {{"p50", "p50", 1, ""}, [](const R& r) { return Cell(r.lengths.p50); }},
      {{"p75", "p75", 1, ""}, [](const R& r) { return Cell(r.lengths.p75); }},
      {{"p90", "p90", 1, ""}, [](const R& r) { return Cell(r.lengths.p90); }},
      {{"max", "max", 0, ""}, [](const R& r) { return Cell(r.lengths.max); }},
  };
  return make_table("tokens", "token lengths per turn-sample (quantiles interpolate linearly)", f,
                    rows);
}

Table run_table(const io::TrajectoryRun& run, const io::RunSummary& s) {
  using R = io::RunSummary;
  const bool any = !run.steps.empty();
  const Cell first = any ? Cell(run.steps.front().step) : Cell(kNaN);
  const Cell last = any ? Cell(run.steps.back().step) : Cell(kNaN);
  const std::vector<Field<R>> f = {
      {{"file", "file", -1, ""}, [&](const R&) { return Cell(run.path); }},
      {{"version", "leap version", -1, ""}, [&](const R&) { return Cell(run.version); }},
      {{"git_commit", "git commit", -1, ""}, [&](const R&) { return Cell(run.git_commit); }},
      {{"schema_version", "schema version", -1, ""},
       [&](const R&) { return Cell(run.schema_version); }},
      {{"swmr_read", "read mode", -1, ""},
       [&](const R&) { return Cell(std::string(run.swmr_read ? "SWMR" : "plain")); }},
      {{"steps_in_file", "steps in file", -1, ""},
       [&](const R&) { return Cell(run.steps_in_file); }},
      {{"steps", "steps shown", -1, ""},
       [&](const R& r) { return Cell(static_cast<int64_t>(r.steps.size())); }},
      {{"first_step", "first step", -1, ""}, [&](const R&) { return first; }},
      {{"last_step", "last step", -1, ""}, [&](const R&) { return last; }},
      {{"steps_pending", "steps being written", -1, ""},
       [&](const R&) { return Cell(run.rows_pending); }},
      {{"tasks", "tasks in suite", -1, ""},
       [&](const R&) { return Cell(static_cast<int64_t>(run.task_ids.size())); }},
      {{"turns", "turns", -1, ""}, [](const R& r) { return Cell(int64_t{r.turns}); }},
      {{"samples", "turn-samples", -1, ""}, [](const R& r) { return Cell(r.samples); }},
      {{"trajectories", "trajectories", -1, ""}, [](const R& r) { return Cell(r.trajectories); }},
      {{"groups", "groups", -1, ""}, [](const R& r) { return Cell(r.groups); }},
      {{"easy", "easy", -1, ""}, [](const R& r) { return Cell(r.easy); }},
      {{"hopeless", "hopeless", -1, ""}, [](const R& r) { return Cell(r.hopeless); }},
      {{"expanded", "expanded", -1, ""}, [](const R& r) { return Cell(r.expanded); }},
      {{"dropped_groups", "dropped groups", -1, ""},
       [](const R& r) { return Cell(r.dropped_groups); }},
      {{"sandbox_jobs", "sandbox jobs", -1, ""}, [](const R& r) { return Cell(r.sandbox_jobs); }},
      {{"jobs_overlapped", "sandbox jobs sent during generation", -1, ""},
       [](const R& r) { return Cell(r.jobs_overlapped); }},
      {{"train_sequences", "sequences trained", -1, ""},
       [](const R& r) { return Cell(r.train_sequences); }},
      {{"train_sequences_early", "of them during the rollout", -1, ""},
       [](const R& r) { return Cell(r.train_sequences_early); }},
      {{"speculative_turns", "turns generated before DCP decided", -1, ""},
       [](const R& r) { return Cell(r.speculative); }},
      {{"speculative_dropped", "of them dropped by DCP", -1, ""},
       [](const R& r) { return Cell(r.speculative_dropped); }},
      {{"rollout_ahead", "turn-1 samples from the step before", -1, ""},
       [](const R& r) { return Cell(r.rollout_ahead); }},
      {{"tokens_generated", "tokens generated", -1, ""},
       [](const R& r) { return Cell(r.tokens_generated); }},
      {{"prefill_tokens", "prompt tokens run", -1, ""},
       [](const R& r) { return Cell(r.prefill_tokens); }},
      {{"kv_reused_frac", "prompt positions from KV caches", 1, "", false, true},
       [](const R& r) { return Cell(ratio(static_cast<double>(r.kv_reused_tokens), static_cast<double>(r.kv_reused_tokens + r.prefill_tokens))); }},
      {{"time_s", "step time s", 1, ""}, [](const R& r) { return Cell(r.time_s); }},
      {{"gen_s", "gen s", 1, ""}, [](const R& r) { return Cell(r.gen_s); }},
      {{"sandbox_s", "sandbox s", 1, ""}, [](const R& r) { return Cell(r.sandbox_s); }},
      {{"train_s", "train s", 1, ""}, [](const R& r) { return Cell(r.train_s); }},
      {{"gen_frac", "gen share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.gen_s, r.time_s)); }},
      {{"sandbox_frac", "sandbox share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.sandbox_s, r.time_s)); }},
      {{"train_frac", "train share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.train_s, r.time_s)); }},
      {{"policy_wait_frac", "policy wait share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.policy_wait_s, r.policy_busy_s + r.policy_wait_s + r.policy_idle_s)); }},
      {{"policy_wait_before_drain_frac", "wait before drain", 1, "", false, true},
       [](const R& r) {
         return Cell(ratio(r.policy_wait_s - r.policy_drain_s, r.policy_busy_s + r.policy_wait_s + r.policy_idle_s));
       }},
      {{"policy_idle_frac", "policy idle share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.policy_idle_s, r.policy_busy_s + r.policy_wait_s + r.policy_idle_s)); }},
      {{"sandbox_idle_frac", "sandbox idle share", 1, "", false, true},
       [](const R& r) { return Cell(ratio(r.sandbox_idle_s, r.sandbox_busy_s + r.sandbox_idle_s)); }},
      {{"pipeline", "pipeline", -1, ""},
       [&](const R&) { return Cell(io::config_value(run.config_ini, "rl", "pipeline")); }},
      {{"simulated_exec_ms", "simulated exec ms (benchmark)", -1, ""},
       [&](const R&) { return Cell(io::config_value(run.config_ini, "sandbox", "simulated_exec_ms")); }},
  };
  return make_table("run", "run", f, std::vector<R>{s});
}

int fail(const Status& st) { return report_error("analyze", st); }

}  // namespace

int run_analyze(const std::vector<std::string>& args) {
  OptionSet opts;
  AnalyzeOptions o;
  o.declare(opts);
  opts.set_positional("analyze.file");
  if (int rc = parse_or_exit("analyze", kUsage, args, opts); rc >= 0) return rc;
  if (o.file.empty())
    return fail(
        invalid_input("no run given: leap analyze RUN_DIR/trajectories.h5 (or the run folder)"));

  auto run = io::read_trajectory_run(o.file, o.last);
  if (!run) return fail(run.status());
  const io::RunSummary summary = io::summarize_run(run->steps, run->samples, run->time_s_before,
                                                   io::configured_max_turns(run->config_ini));
  const bool empty = run->steps.empty();

  // Tables in output order. A run without steps prints only its "run" facts as text, but JSON
  // and CSV keep every table, with its header and no rows, so that a script polling a job before
  // its first step reads the same shape as later (pandas.read_csv of nothing fails).
  std::vector<Table> tables = {run_table(*run, summary)};
  if (!empty || o.format != "text")
    for (auto make : {steps_table, step_verdicts_table, verdicts_table, tokens_table})
      tables.push_back(make(summary));
  std::string table = o.table;
  if (o.format == "csv" && table == "all") table = "steps";
  std::erase_if(tables, [&](const Table& t) { return table != "all" && t.name != table; });

  std::string out;
  if (o.format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& t : tables) {
      auto rows = rows_to_json(t);
      j[t.name] = t.name == "run" ? rows.at(0) : rows;
    }
    out = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else if (o.format == "csv") {
    if (!tables.empty()) out = render_csv(tables.front());
  } else {
    for (const auto& t : tables) {
      if (!out.empty()) out += '\n';
      out += t.name == "run" ? render_text_vertical(t) : render_text(t);
    }
    if (empty)
      out +=
          "\nno steps written yet: the run has not finished its first step (analyze it again "
          "later), or it "
          "stopped before any step\n";
    if (run->rows_pending > 0)
      out += "\nnote: " + std::to_string(run->rows_pending) +
             " /steps row(s) are still being written and are left out\n";
  }
  if (o.output.empty()) {
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  if (Status st = check_output_folder(o.output, "--output"); !st) return fail(st);
  if (Status st = write_file_atomic(o.output, out); !st) return fail(st.with_context("--output"));
  return 0;
}

}  // namespace leap::app
