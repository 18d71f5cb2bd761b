// Rank 0's side of `leap eval`: a policy on a list of tasks, n samples each, up to `turns` turns,
// through the same rollout and sandbox phases as an RL step (TurnRunner) but with DCP off (every
// failed sample gets the next turn with its real feedback) and no training. The other ranks
// serve with serve_policy() / serve_sandbox() until stop(). Tasks go in batches, so rank 0 can
// report progress; a sample's sampling seed depends on (seed, batch, its place in the batch),
// never on the rank that generates it, so any layout gives the same records.
#pragma once

#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "mpi/engines.h"
#include "mpi/topology.h"
#include "mpi/turn_runner.h"
#include "rl/eval_metrics.h"
#include "rl/rl_config.h"
#include "tasks/suite.h"

namespace leap::mpi {

struct EvaluatorOptions {
  int samples = 8;  // n per task
  int turns = 3;
  int sandbox_retries = 1;       // re-verifications of a SANDBOX_ERROR
  int64_t prompt_budget = 2048;  // tokens a prompt may take: the context minus max new tokens
};

class Evaluator {
 public:
  Evaluator(const Topology& topo, const tasks::Suite& suite, const rl::PromptConfig& prompt,
            EvaluatorOptions opts, uint64_t seed, PolicyEngine& policy,
            const rl::PromptFormat& format, VerifyEngine* local_verifier, const Logger& log);

  // Every turn-sample of the batch's tasks, one record each; adds the time spent to *times.
  Expected<std::vector<rl::EvalRecord>> run_batch(int64_t batch, const std::vector<int>& tasks,
                                                  TurnTimes* times);
  // Tells every other rank to leave its serve loop.
  void stop();

 private:
  const Topology& topo_;
  const tasks::Suite& suite_;
  EvaluatorOptions opts_;
  uint64_t seed_;
  TurnRunner turns_;
  rl::DcpController no_pruning_;
  rl::PromptBuilder prompts_;
};

}  // namespace leap::mpi
