// The subcommand table and the option handling every subcommand shares.
#include "apps/subcommands.h"

#include <cstdio>

namespace leap::app {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> kTable = {
      {"train", "the MPI training program: --mode rl (default) or --mode sft", run_train},
      {"eval", "a policy on a suite: pass@k, per-turn accuracy, fast_p on GPU", run_eval},
      {"check", "one answer against one task through the sandbox; prints the verdict as JSON", run_check},
      {"score", "per-token log-probabilities of a token sequence under a checkpoint, as JSON", run_score},
      {"analyze", "tables of a run's HDF5 file (also while it runs): pass rates, DCP, verdicts, tokens, time",
       run_analyze},
      {"tasks", "list and validate task suites", run_tasks},
      {"plan", "the memory a policy rank needs, by kind, and whether it fits a device (reads config.json only)",
       run_plan},
      {"layout", "where every rank of a job goes (role, GPU, CPU package), without a GPU", run_layout},
      {"tokenize", "a Hugging Face tokenizer.json: text to ids as JSON (--input), ids to text (--decode)",
       run_tokenize},
      {"env", "what this node gives leap: CPU threads and vector units, OpenBLAS's kernels (and the fix), threads, GPUs",
       run_env},
      {"worker", "the sandbox's worker process (started by the sandbox itself)", run_worker, true},
  };
  return kTable;
}

int run_not_built(const char* sub) {
  std::fprintf(stderr, "leap %s: not built yet in this version of leap\n", sub);
  return 2;
}

int parse_or_exit(const char* sub, const char* usage, const std::vector<std::string>& args, OptionSet& opts,
                  const std::function<Status()>& validate) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("usage: leap %s %s\n\noptions (INI section.key; the command line wins over --config):\n%s", sub,
                  usage, opts.help_text().c_str());
      return 0;
    }
  }
  std::vector<std::string> rest;
  bool print_config = false;
  for (const auto& a : args) {
    if (a == "--print-config") print_config = true;
    else rest.push_back(a);
  }
  if (Status st = opts.parse(rest); !st) return report_error(sub, st);
  if (validate) {
    if (Status st = validate(); !st) return report_error(sub, st);
  }
  if (print_config) {
    std::printf("%s", opts.to_ini().c_str());
    return 0;
  }
  return -1;
}

int report_error(const std::string& sub, const Status& st) {
  std::fprintf(stderr, "leap %s: error: %s\n", sub.c_str(), st.message().c_str());
  return st.exit_code();
}

}  // namespace leap::app
