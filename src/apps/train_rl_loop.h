// The RL run on rank 0: the coordinator's steps from the first (or the resumed) step to
// train.steps, the progress line, checkpoints (every K steps or M minutes, and at the end: see
// io::CheckpointSchedule), and the graceful stop: when SIGUSR1 or SIGTERM arrived during a step,
// rank 0 checkpoints that step, closes the HDF5 file and tells the other ranks to stop;
// `--resume` continues from there. Such a run exits 75 (EX_TEMPFAIL), which the jobscripts
// requeue on; a finished run exits 0.
#pragma once

#include <nlohmann/json.hpp>

#include "apps/train_config.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "common/status.h"
#include "io/trajectory_file.h"
#include "mpi/engines.h"
#include "mpi/topology.h"

namespace leap::app {

struct RlRunContext {
  const TrainConfig& config;
  const mpi::Topology& topo;
  const tasks::Suite& suite;
  PolicyState& policy;
  mpi::VerifyEngine* local_sandbox;  // null when sandbox ranks verify
  io::TrajectoryFile* out;
  const nlohmann::json& resume_state;  // null for a fresh run
  int64_t prompt_budget;
  const Logger& log;
  const StopSignal& stop;  // installed by the command before MPI work starts
  bool* stopped_early = nullptr;  // set when a signal stopped the run before its last step
};

// Runs on rank 0 while the other ranks serve. Errors during a step are fatal (they abort every
// rank, after saying why); the returned status is the closing of the output.
Status run_rl_coordinator(const RlRunContext& ctx);

}  // namespace leap::app
