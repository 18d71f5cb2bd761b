// The [eval] section of `leap eval`: which split, how many samples and turns, which pass@k and
// fast_p to report, where the JSON goes. Declared once here; validate() checks what involves
// two options (k <= n) and parses the lists.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace leap::app {

struct EvalOptions {
  std::string split = "heldout";  // train | heldout | all
  int samples = 8;                // n per task
  int turns = 3;
  std::string k;               // pass@k for each k; empty: 1 and samples
  std::string fast_p = "1,2";  // fast_p thresholds (GPU only)
  int batch_tasks = 4;         // tasks per rollout batch
  std::string output = "eval.json";

  void declare(OptionSet& opts);
  // The k list and the p list, parsed and checked against samples; invalid_input naming the key.
  Status validate(std::vector<int>* ks, std::vector<double>* ps) const;
};

}  // namespace leap::app
