// The SFT run (`leap train --mode sft`): rank 0 builds the material (verifying through the sandbox
// ranks, or in-process) while the other ranks serve; then every policy rank gets the material and
// trains, from step 0 or from a resumed checkpoint's next step and data order; rank 0 decides when
// to checkpoint (io::CheckpointSchedule: train.checkpoint_every, train.checkpoint_minutes, and the
// last step) and every policy rank writes its part (mpi/checkpoint_write.h). An SFT checkpoint's state.json holds mode "sft", the data order (the example
// sampler's epoch and position) and a hash of the material, so a resumed run makes the same
// updates as an uninterrupted one.
#pragma once

#include <nlohmann/json.hpp>

#include "apps/train_config.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "common/status.h"
#include "mpi/engines.h"
#include "mpi/topology.h"

namespace leap::app {

struct SftRunContext {
  const TrainConfig& config;
  const mpi::Topology& topo;
  PolicyState& policy;                 // empty on sandbox ranks
  mpi::VerifyEngine* local_sandbox;    // the sandbox rank's engine, or rank 0's in-process one
  const nlohmann::json& resume_state;  // null for a fresh run (and on sandbox ranks)
  int64_t prompt_budget;
  const Logger& log;
  const StopSignal& stop;  // SIGUSR1/SIGTERM: checkpoint the step in flight and stop
  bool* stopped_early;     // set on every rank when a signal stopped the run before its end
  // Set on every policy rank, which all return the refusal together, when rank 0 found the SFT
  // material empty (bad input: the job exits 2 rather than aborting).
  bool* material_refused;
};

// Every rank. Errors are returned; the caller makes them fatal on every rank, but a refused
// material (ctx.material_refused) exits 2.
Status run_sft(const SftRunContext& ctx);

}  // namespace leap::app
