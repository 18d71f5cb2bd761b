// Evaluation batches over the ranks, and their records.
#include "mpi/evaluator.h"

#include "common/check.h"

namespace leap::mpi {

namespace {
rl::DcpOptions no_pruning(int turns) {
  rl::DcpOptions o;
  o.mode = rl::DcpMode::kOff;  // every group is expanded: each failed sample continues
  o.max_turns = turns;
  return o;
}
}  // namespace

Evaluator::Evaluator(const Topology& topo, const tasks::Suite& suite,
                     const rl::PromptConfig& prompt, EvaluatorOptions opts, uint64_t seed,
                     PolicyEngine& policy, const rl::PromptFormat& format,
                     VerifyEngine* local_verifier, const Logger& log)
    : topo_(topo),
      suite_(suite),
      opts_(opts),
      seed_(seed),
      turns_(topo, policy, local_verifier, opts.sandbox_retries, log, "batch"),
      no_pruning_(no_pruning(opts.turns)),
      prompts_(prompt.options(opts.prompt_budget), format) {
  LEAP_CHECK(topo.is_coordinator(), "the Evaluator runs on world rank 0 only");
}

Expected<std::vector<rl::EvalRecord>> Evaluator::run_batch(int64_t batch,
                                                           const std::vector<int>& tasks,
                                                           TurnTimes* times) {
  StepState state(batch, tasks, StepOptions{opts_.samples, opts_.turns, seed_});
  LEAP_RETURN_IF_ERROR(turns_.run_turns(state, suite_, prompts_, no_pruning_, opts_.turns, times));
  std::vector<rl::EvalRecord> out;
  for (const auto& g : state.groups()) {
    for (size_t s = 0; s < g.samples.size(); ++s) {
      for (const auto& r : g.samples[s].turns) {
        rl::EvalRecord e;
        e.task = g.task;
        e.sample = static_cast<int>(s);
        e.turn = r.turn;
        // A turn that never came back verified is a SANDBOX_ERROR, which the evaluation counts as a
        // failure (training leaves such a trajectory out of its pass rates; README, leap eval).
        e.verdict = r.verified ? static_cast<sandbox::Verdict>(r.outcome.verdict)
                               : sandbox::Verdict::kSandboxError;
        e.prompt_tokens = static_cast<int64_t>(r.completion.prompt_tokens.size());
        e.completion_tokens = static_cast<int64_t>(r.completion.completion_tokens.size());
        if (r.verified && r.outcome.speedup >= 0) e.speedup = r.outcome.speedup;
        e.completion = r.completion.text;
        e.feedback = r.outcome.feedback;
        out.push_back(std::move(e));
      }
    }
  }
  return out;
}

void Evaluator::stop() {
  announce(Control::Kind::kStop, 0, 0, topo_.world);
}

}  // namespace leap::mpi
