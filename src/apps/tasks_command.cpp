// `leap tasks list FILE` and `leap tasks validate FILE`: look at a suite without running anything.
// validate exits 0 with a count, or 2 with the loader's message (file, line, field, fix); list
// prints one row per task. The suite path is the option tasks.suite (alias --suite), which a bare
// argument fills, so `leap tasks list --suite FILE` works too.
#include <algorithm>
#include <cstdio>
#include <string>

#include "apps/subcommands.h"
#include "tasks/suite.h"

namespace leap::app {
namespace {

constexpr const char* kUsage = "list|validate FILE.jsonl  (or --suite FILE.jsonl)";

void print_table(const tasks::Suite& suite) {
  std::printf("%-28s %5s  %-18s %-7s  %s\n", "id", "level", "family", "split", "buffers");
  for (const auto& t : suite.tasks) {
    std::string bufs;
    for (const auto& b : t.buffers) {
      if (!bufs.empty()) bufs += ", ";
      bufs += b.name + ":" + tasks::dtype_name(b.dtype) + "[";
      for (size_t d = 0; d < b.shape.size(); ++d) bufs += (d ? "," : "") + b.shape[d];
      bufs += "]";
      if (b.role != tasks::Role::kIn) bufs += std::string("->") + tasks::role_name(b.role);
    }
    std::printf("%-28s %5d  %-18s %-7s  %s\n", t.id.c_str(), t.level, t.family.c_str(),
                tasks::split_name(t.split), bufs.c_str());
  }
}

}  // namespace

int run_tasks(const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "list" && args[0] != "validate")) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::printf("usage: leap tasks %s\n", kUsage);
      return 0;
    }
    std::fprintf(stderr, "leap tasks: expected 'list' or 'validate'%s\nusage: leap tasks %s\n",
                 args.empty() ? "" : (", got '" + args[0] + "'").c_str(), kUsage);
    return 2;
  }
  const std::string action = args[0];
  OptionSet opts;
  tasks::TasksConfig cfg;
  cfg.declare(opts);
  opts.set_positional("tasks.suite");
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const std::string sub = "tasks " + action;
  if (int rc = parse_or_exit(sub.c_str(), "FILE.jsonl  (or --suite FILE.jsonl)", rest, opts);
      rc >= 0)
    return rc;

  auto suite = tasks::load_suite(cfg.suite);
  if (!suite) {
    report_error(sub, suite.status());
    return 2;  // a missing or invalid suite is always the user's input
  }
  if (action == "list") {
    print_table(*suite);
    return 0;
  }
  const size_t train = tasks::select_tasks(*suite, tasks::Split::kTrain).size();
  const auto seen = static_cast<size_t>(
      std::count_if(suite->tasks.begin(), suite->tasks.end(),
                    [](const tasks::Task& t) { return !t.seen_in_train.empty(); }));
  std::printf("%s: %zu tasks valid (%zu train, %zu heldout", cfg.suite.c_str(), suite->tasks.size(),
              train, suite->tasks.size() - train);
  if (seen > 0)
    std::printf(": %zu clean, %zu marked seen_in_train", suite->tasks.size() - train - seen, seen);
  std::printf(")\n");
  return 0;
}

}  // namespace leap::app
