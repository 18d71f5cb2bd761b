// The [eval] section and its list options.
#include "apps/eval_options.h"

#include <fmt/format.h>

#include <cstdlib>

namespace leap::app {


void EvalOptions::declare(OptionSet& opts) {
  opts.add(
      "eval.split", &split, std::string("heldout"),
      "Tasks to evaluate: the suite's heldout tasks, its train tasks, or all (reported per split).",
      {.choices = {"train", "heldout", "all"}, .alias = "split"});
  opts.add("eval.samples", &samples, 8, "n: samples per task (each gets up to eval.turns turns).",
           {.min = 1, .max = 4096});
  opts.add(
      "eval.turns", &turns, 3,
      "Turns per sample: a failed sample is shown its answer and the sandbox's feedback and tries "
      "again, up to this many times (Acc@1..Acc@turns).",
      {.min = 1, .max = 16});
  opts.add("eval.k", &k, std::string(""),
           "Comma-separated k of pass@k (each 1 <= k <= eval.samples); empty: 1 and eval.samples.");
  opts.add("eval.fast_p", &fast_p, std::string("1,2"),
           "Comma-separated speedup thresholds p of fast_p (correct and faster than the task's "
           "reference by "
           "more than p); reported only where the sandbox times kernels (GPU).");
  opts.add(
      "eval.batch_tasks", &batch_tasks, 4,
      "Tasks sampled together in one rollout batch; progress is reported per batch. Sampling seeds "
      "depend on run.seed and this.",
      {.min = 1, .max = 4096});
  opts.add(
      "eval.output", &output, std::string("eval.json"),
      "JSON report (metrics, per-task counts and every turn-sample's record), written atomically; "
      "empty: none.",
      {.alias = "output"});
}

Status EvalOptions::validate(std::vector<int>* ks, std::vector<double>* ps) const {
  ks->clear();
  ps->clear();
  const std::string k_list = k.empty() ? (samples > 1 ? fmt::format("1,{}", samples) : "1") : k;
  for (const auto& item : split_list(k_list)) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1)
      return invalid_input(fmt::format(
          "eval.k = '{}': '{}' is not a positive integer; give e.g. --eval.k 1,8", k, item));
    if (v > samples)
      return invalid_input(fmt::format(
          "eval.k = '{}': pass@{} needs at least {} samples per task but eval.samples = "
          "{}; raise eval.samples or lower k",
          k, v, v, samples));
    ks->push_back(static_cast<int>(v));
  }
  if (fast_p.empty()) return Status::ok();
  for (const auto& item : split_list(fast_p)) {
    char* end = nullptr;
    double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(v >= 0))
      return invalid_input(
          fmt::format("eval.fast_p = '{}': '{}' is not a speedup >= 0; give e.g. --eval.fast_p 1,2",
                      fast_p, item));
    ps->push_back(v);
  }
  return Status::ok();
}

}  // namespace leap::app
