// The distributed RL step (design.md, One RL step). World rank 0 runs the Coordinator; the other
// policy ranks run serve_policy() and the sandbox ranks serve_sandbox() until told to stop.
// Every phase starts with a Control broadcast over the world, so all ranks always agree on what
// comes next and no rank waits on work that will never come:
//   the turns, with rl.pipeline = stream: one kStream phase (StreamRunner) in which generation,
//              verification and DCP overlap; with rl.pipeline = sync,
//   per turn (TurnRunner, shared with the evaluator):
//              kRollout  rank 0 spreads the turn's prompts over policy ranks, balanced by tokens;
//              kSandbox  sandbox ranks pull the turn's candidates from rank 0's queue until it
//                        drains (or rank 0 verifies in-process when there are no sandbox ranks);
//                        after turn 1 rank 0 applies DCP;
//   then:      kTrain    rank 0 scores the groups and spreads the training samples over policy
//                        ranks balanced by tokens; they update collectively (gradients summed);
//              kCheckReplicas (every N steps, optional) policy ranks compare parameter checksums;
//              kCheckpoint (a checkpoint) every policy rank writes its part of the folder
//                        (mpi/checkpoint_write.h);
//   at the end kStop.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common/log.h"
#include "common/status.h"
#include "io/trajectory_file.h"
#include "mpi/engines.h"
#include "mpi/step_state.h"
#include "mpi/topology.h"
#include "mpi/stream_runner.h"
#include "mpi/turn_runner.h"
#include "rl/rl_config.h"
#include "tasks/suite.h"
#include "tasks/task_sampler.h"

namespace leap::mpi {

struct CoordinatorOptions {
  int batch_tasks = 4;          // B: tasks (groups) per step
  int sandbox_retries = 1;      // re-verifications of a SANDBOX_ERROR (the infrastructure's fault)
  int check_replicas_every = 0; // 0: never
  int64_t prompt_budget = 2048; // tokens a prompt may take: the context minus max new tokens
  int micro_batch_seqs = 4;     // a policy rank's micro-batch: one hand-out of training in a rollout
  bool zero_stage2 = false;     // optim.zero_stage 2: the gradient is reduced during each backward
};

// What one step did, for the progress line and the end-of-run summary.
struct StepReport {
  io::StepRow row;
  int64_t jobs_if_unpruned = 0;  // sandbox jobs had every group with a failure been expanded
  int64_t reference_runs = 0;    // sandbox jobs that ran their task's reference first (not cached)
  int64_t void_samples = 0;      // samples ended by a SANDBOX_ERROR after its retries (no reward)
  int64_t samples = 0;           // samples with at least one turn
};

class Coordinator {
 public:
  Coordinator(const Topology& topo, const tasks::Suite& suite, const rl::RlSections& rl,
              CoordinatorOptions opts, uint64_t seed, PolicyEngine& policy,
              const rl::PromptFormat& format, VerifyEngine* local_verifier, const Logger& log);

  // One RL step; appends it to `out` when given. `another_follows`: the run has a step after this
  // one, which rl.rollout_ahead may start during this one.
  Expected<StepReport> run_step(int64_t step, io::TrajectoryFile* out, bool another_follows = false);
  // Tells every other rank to leave its serve loop.
  void stop();
  // Writes a checkpoint with every policy rank (the others take part from their serve loop).
  Status save_checkpoint(const io::CheckpointRequest& req);

  rl::DcpController& dcp() { return dcp_; }
  // CPU seconds of the run's earlier attempts (a resumed run continues the count).
  void set_cpu_offset(double seconds) { cpu_offset_s_ = seconds; }
  // The job's CPU seconds at the end of the last step (cumulative over attempts).
  double last_cpu_s() const { return last_cpu_s_; }
  tasks::TaskSampler& sampler() { return sampler_; }
  // The sampler's state between the last step and the next, for a checkpoint: as it was before
  // the next step's tasks were drawn ahead (rl.rollout_ahead), since a resumed run draws them.
  tasks::TaskSampler::State sampler_state() const {
    return sampler_between_steps_ ? *sampler_between_steps_ : sampler_.state();
  }
  // Whether steps train during the rollout (rl.overlap_training), and if not, why; for the log.
  bool overlap_training() const { return overlap_.has_value(); }
  const std::string& overlap_training_off() const { return overlap_off_; }

 private:
  // Trains on the step's samples (those not trained during the rollout, which `times` counts);
  // writes the sequences and tokens trained into *row.
  TrainReport train(const StepState& state, int64_t step, const TurnTimes& times, io::StepRow* row);
  // Whether a trajectory trains as one sequence (rl.train_trajectory_once where it is exact).
  bool trajectory_once() const;
  // The turns of the step's latest round, through the configured pipeline (rl.rollout_ahead:
  // `carried`, this step's turn 1 as the step before left it; `next`, the next step's).
  Status run_turns(StepState& state, TurnTimes* times, RolloutAhead* carried = nullptr, RolloutAhead* next = nullptr);
  // A step's state with its tasks drawn from the sampler.
  StepState draw_step(int64_t step);
  // Draws the next step's tasks and makes its turn-1 items, for this step's phase to start
  // (rl.rollout_ahead); leaves none when a prompt cannot be built.
  void start_next_step(int64_t next_step);

  const Topology& topo_;
  const tasks::Suite& suite_;
  const rl::RlSections& rl_;
  CoordinatorOptions opts_;
  uint64_t seed_;
  PolicyEngine& policy_;
  TurnRunner turns_;
  StreamRunner stream_;
  rl::DcpController dcp_;
  tasks::TaskSampler sampler_;
  rl::PromptBuilder prompts_;
  std::optional<OverlapTraining> overlap_;  // training during the rollout, when it applies
  std::string overlap_off_;                 // why it does not
  // rl.rollout_ahead: the next step, drawn and started during this one, and the sampler's state
  // before it was drawn.
  std::optional<StepState> next_state_;
  std::optional<RolloutAhead> ahead_;
  std::optional<tasks::TaskSampler::State> sampler_between_steps_;
  double cpu_offset_s_ = 0, last_cpu_s_ = 0;
};

// Collective over `world` (after a kCpuTime Control): the CPU seconds of every rank's process
// tree, summed on rank 0 (0 elsewhere).
double job_cpu_seconds(MPI_Comm world);

// Serve loops of the other ranks; they return when the coordinator calls stop().
Status serve_policy(const Topology& topo, PolicyEngine& policy);
Status serve_sandbox(const Topology& topo, VerifyEngine& verifier);

// The token budget for prompts: what remains of the context after the completion.
int64_t prompt_budget(int64_t context, int64_t max_new_tokens);

}  // namespace leap::mpi
