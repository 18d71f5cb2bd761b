// The evaluation's JSON and table. fast_p is null (JSON) and n/a (table) where nothing was timed.
#include "apps/eval_report.h"

#include <fmt/format.h>

#include "leap/version.h"

namespace leap::app {

namespace {

using nlohmann::json;

std::string number_key(double p) {
  return fmt::format("{}", p);
}

json summary_json(const rl::EvalSummary& s, const rl::EvalSpec& spec) {
  json j;
  j["tasks"] = s.tasks;
  j["samples"] = s.samples;
  json pass = json::object();
  for (size_t k = 0; k < spec.ks.size(); ++k) pass[std::to_string(spec.ks[k])] = s.pass_at_k[k];
  j["pass_at_k"] = pass;
  j["acc"] = s.acc;
  if (spec.timed) {
    json fast = json::object();
    for (size_t p = 0; p < spec.ps.size(); ++p) fast[number_key(spec.ps[p])] = s.fast_p[p];
    j["fast_p"] = fast;
  } else {
    j["fast_p"] = nullptr;
  }
  json verdicts = json::array();
  for (const auto& counts : s.verdicts) {
    json turn = json::object();
    for (size_t v = 0; v < counts.size(); ++v)
      if (counts[v] > 0)
        turn[std::string(sandbox::verdict_name(static_cast<sandbox::Verdict>(v)))] = counts[v];
    verdicts.push_back(turn);
  }
  j["verdicts_by_turn"] = verdicts;
  j["stopped_before_turn"] = s.stopped;
  j["turn_samples"] = s.turn_samples;
  j["mean_completion_tokens"] = s.mean_completion_tokens;
  return j;
}

std::string cell(double x) {
  return fmt::format("{:>7.3f}", x);
}

std::string table_row(const std::string& name, const rl::EvalSummary& s, const rl::EvalSpec& spec) {
  std::string row = fmt::format("{:<28}{:>6}", name, s.tasks);
  for (size_t k = 0; k < spec.ks.size(); ++k) row += cell(s.pass_at_k[k][0]);
  for (double a : s.acc) row += cell(a);
  for (size_t p = 0; p < spec.ps.size(); ++p)
    row += spec.timed ? cell(s.fast_p[p][0]) : fmt::format("{:>7}", "n/a");
  return row + "\n";
}

}  // namespace

EvalBreakdown break_down(const tasks::Suite& suite, const std::vector<int>& tasks,
                         const std::vector<rl::EvalRecord>& records, const rl::EvalSpec& spec) {
  EvalBreakdown b;
  b.tasks = rl::tally_tasks(tasks, records, spec);
  std::vector<const rl::TaskTally*> all;
  std::map<std::string, std::vector<const rl::TaskTally*>> splits, families;
  // The held-out tasks that really are new combinations, apart, where the suite marks the others
  // (seen_in_train): a held-out figure that counts near-copies of train tasks claims too much.
  std::vector<const rl::TaskTally*> clean;
  for (const auto& t : b.tasks) {
    const tasks::Task& task = suite.tasks[static_cast<size_t>(t.task)];
    all.push_back(&t);
    b.per_task.push_back(rl::summarize({&t}, spec));
    splits[tasks::split_name(task.split)].push_back(&t);
    families[task.family].push_back(&t);
    if (task.split == tasks::Split::kHeldout && task.seen_in_train.empty()) clean.push_back(&t);
  }
  b.overall = rl::summarize(all, spec);
  const auto held = splits.find(tasks::split_name(tasks::Split::kHeldout));
  if (!clean.empty() && clean.size() < held->second.size()) splits[kHeldoutClean] = clean;
  for (const auto& [name, list] : splits) b.by_split[name] = rl::summarize(list, spec);
  for (const auto& [name, list] : families) b.by_family[name] = rl::summarize(list, spec);
  return b;
}

json eval_json(const tasks::Suite& suite, const EvalBreakdown& b,
               const std::vector<rl::EvalRecord>& records, const rl::EvalSpec& spec,
               const EvalRunInfo& info) {
  json j;
  j["leap_version"] = LEAP_VERSION;
  j["git_commit"] = LEAP_GIT_COMMIT;
  j["model"] = info.model;
  j["suite"] = info.suite;
  j["split"] = info.split;
  j["device"] = info.device;
  j["seed"] = info.seed;
  j["samples_per_task"] = spec.samples;
  j["turns"] = spec.turns;
  j["k"] = spec.ks;
  j["fast_p_thresholds"] = spec.ps;
  j["timed"] = spec.timed;
  j["batch_tasks"] = info.batch_tasks;
  j["sampler"] = {{"temperature", info.temperature},
                  {"top_p", info.top_p},
                  {"max_new_tokens", info.max_new_tokens}};
  j["time_s"] = info.time_s;
  j["overall"] = summary_json(b.overall, spec);
  json splits = json::object(), families = json::object();
  for (const auto& [name, s] : b.by_split) splits[name] = summary_json(s, spec);
  for (const auto& [name, s] : b.by_family) families[name] = summary_json(s, spec);
  j["by_split"] = splits;
  j["by_family"] = families;
  json per_task = json::array();
  for (size_t i = 0; i < b.tasks.size(); ++i) {
    const rl::TaskTally& t = b.tasks[i];
    const tasks::Task& task = suite.tasks[static_cast<size_t>(t.task)];
    json row = summary_json(b.per_task[i], spec);
    row.erase("tasks");
    row["id"] = task.id;
    row["family"] = task.family;
    row["split"] = tasks::split_name(task.split);
    row["correct_by_turn"] = t.correct_by_turn;
    if (!task.seen_in_train.empty()) row["seen_in_train"] = task.seen_in_train;
    per_task.push_back(row);
  }
  j["per_task"] = per_task;
  json recs = json::array();
  for (const auto& r : records) {
    recs.push_back({{"task", suite.tasks[static_cast<size_t>(r.task)].id},
                    {"sample", r.sample},
                    {"turn", r.turn},
                    {"verdict", std::string(sandbox::verdict_name(r.verdict))},
                    {"prompt_tokens", r.prompt_tokens},
                    {"completion_tokens", r.completion_tokens},
                    {"speedup", r.speedup ? json(*r.speedup) : json(nullptr)},
                    {"completion", r.completion},
                    {"feedback", r.feedback}});
  }
  j["records"] = recs;
  j["config"] = info.config_ini;
  return j;
}

std::string eval_table(const tasks::Suite& suite, const EvalBreakdown& b, const rl::EvalSpec& spec,
                       const EvalRunInfo& info) {
  std::string out = fmt::format(
      "{} on {} ({} split): {} tasks x {} samples, up to {} turns, temperature {}, {}\n\n",
      info.model, info.suite, info.split, b.overall.tasks, spec.samples, spec.turns,
      info.temperature, info.device);
  std::string head = fmt::format("{:<28}{:>6}", "", "tasks");
  for (int k : spec.ks) head += fmt::format("{:>7}", fmt::format("pass@{}", k));
  for (int t = 1; t <= spec.turns; ++t) head += fmt::format("{:>7}", fmt::format("Acc@{}", t));
  for (double p : spec.ps) head += fmt::format("{:>7}", fmt::format("fast_{}", p));
  out += head + "\n";
  out += table_row("all", b.overall, spec);
  for (const auto& [name, s] : b.by_split) out += table_row("split " + name, s, spec);
  for (const auto& [name, s] : b.by_family) out += table_row("family " + name, s, spec);
  out += "\n";
  for (size_t i = 0; i < b.tasks.size(); ++i)
    out += table_row(suite.tasks[static_cast<size_t>(b.tasks[i].task)].id, b.per_task[i], spec);
  out += "\nverdicts (turn-samples):\n";
  for (size_t u = 0; u < b.overall.verdicts.size(); ++u) {
    std::string line = fmt::format("  turn {}:", u + 1);
    for (size_t v = 0; v < b.overall.verdicts[u].size(); ++v)
      if (b.overall.verdicts[u][v] > 0)
        line += fmt::format(" {} {}", sandbox::verdict_name(static_cast<sandbox::Verdict>(v)),
                            b.overall.verdicts[u][v]);
    out += line + "\n";
  }
  out += fmt::format(
      "\npass@k and fast_p on turn-1 samples (unbiased estimator, mean over tasks); Acc@t: "
      "fraction of samples correct "
      "by turn t, with the sandbox's feedback between turns; fast_p: {}.\n",
      spec.timed ? "correct and faster than the task's reference by more than p"
                 : "n/a, the sandbox did not time kernels (CPU interpreter)");
  return out;
}

}  // namespace leap::app
