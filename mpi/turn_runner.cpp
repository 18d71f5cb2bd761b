// The generation and verification turns of one step, over the ranks.
#include "mpi/turn_runner.h"

#include <chrono>

#include "common/stopwatch.h"
#include "mpi/work_balance.h"

namespace leap::mpi {

void announce(Control::Kind kind, int64_t step, int turn, MPI_Comm world) {
  Control c{kind, step, turn};
  broadcast(c, 0, world);
}

TurnRunner::TurnRunner(const Topology& topo, PolicyEngine& policy, VerifyEngine* local_verifier,
                       int sandbox_retries, const Logger& log, const char* unit)
    : topo_(topo),
      policy_(policy),
      log_(log),
      unit_(unit),
      dispatcher_(topo, local_verifier, sandbox_retries, log),
      policy_ranks_(topo.world_ranks_of(Role::kPolicy)) {}

Status TurnRunner::rollout(StepState& state, const std::vector<RolloutItem>& items, int turn, double* policy_gen_s) {
  announce(Control::Kind::kRollout, state.step(), turn, topo_.world);
  std::vector<int64_t> weights;
  for (const auto& it : items)
    weights.push_back(static_cast<int64_t>(it.prompt_ids.size()));
  const int n = static_cast<int>(policy_ranks_.size());
  auto owner = balance_by_weight(weights, n);
  // A later turn goes back to the rank that generated the sample's previous turn, which keeps
  // its KV cache (sampler.reuse_kv). Turn 1 spread a group's samples evenly, so this stays about
  // as balanced.
  for (size_t i = 0; i < items.size() && turn > 1; ++i) {
    const auto& turns = state.groups()[static_cast<size_t>(StepState::group_of(items[i].uid))]
                            .samples[static_cast<size_t>(StepState::sample_of(items[i].uid))]
                            .turns;
    if (turns.size() < 2) continue;
    const int holder = turns[turns.size() - 2].policy_rank;
    for (int p = 0; p < n; ++p)
      if (policy_ranks_[static_cast<size_t>(p)] == holder) owner[i] = p;
  }
  std::vector<RolloutWork> work(static_cast<size_t>(n));
  for (size_t i = 0; i < items.size(); ++i)
    work[static_cast<size_t>(owner[i])].items.push_back(items[i]);
  for (int p = 1; p < n; ++p)
    send(work[static_cast<size_t>(p)], policy_ranks_[static_cast<size_t>(p)], topo_.world);
  const auto t0 = std::chrono::steady_clock::now();
  LEAP_RETURN_IF_ERROR(state.add_completions(policy_.generate(work[0].items), 0));
  *policy_gen_s += seconds_since(t0);
  for (int p = 1; p < n; ++p) {
    const int rank = policy_ranks_[static_cast<size_t>(p)];
    auto r = recv<RolloutResult>(rank, topo_.world);
    if (!r) return r.status().with_context("rollout results from rank " + std::to_string(rank));
    LEAP_RETURN_IF_ERROR(state.add_completions(r->completions, rank));
    *policy_gen_s += r->busy_s;
  }
  return Status::ok();
}

Status TurnRunner::run_turns(StepState& state, const tasks::Suite& suite,
                             const rl::PromptBuilder& prompts, const rl::DcpController& dcp,
                             int max_turns, TurnTimes* times) {
  const int64_t step = state.step();
  auto t_last_gen = std::chrono::steady_clock::now();
  for (int turn = 1; turn <= max_turns; ++turn) {
    int dropped = 0;
    LEAP_ASSIGN_OR_RETURN(auto items, state.make_turn(turn, suite, prompts, &dropped));
    if (dropped > 0)
      log_.warn("{} {} turn {}: {} sample(s) stopped: prompt longer than the context", unit_, step,
                turn, dropped);
    if (items.empty()) break;
    auto t0 = std::chrono::steady_clock::now();
    LEAP_RETURN_IF_ERROR(rollout(state, items, turn, &times->policy_gen_s));
    times->gen_s += seconds_since(t0);
    t0 = t_last_gen = std::chrono::steady_clock::now();
    const double slot_seconds_before = dispatcher_.slot_seconds();
    const int64_t reference_runs_before = dispatcher_.reference_runs();
    LEAP_ASSIGN_OR_RETURN(auto outcomes, dispatcher_.dispatch(state.sandbox_jobs(), step, turn));
    LEAP_RETURN_IF_ERROR(state.add_outcomes(outcomes));
    const double verifying = seconds_since(t0);
    times->sandbox_s += verifying;
    times->policy_wait_s += verifying * static_cast<double>(policy_ranks_.size());  // all of them wait
    times->sandbox_busy_s += dispatcher_.slot_seconds() - slot_seconds_before;
    times->reference_runs += static_cast<int>(dispatcher_.reference_runs() - reference_runs_before);
    if (turn == 1)
      state.apply_dcp(dcp);
    else
      state.close_turn(turn);
    if (!state.any_active()) break;
  }
  times->drain_s += seconds_since(t_last_gen);
  times->sandbox_slots = dispatcher_.slots_seen();
  return Status::ok();
}

}  // namespace leap::mpi
