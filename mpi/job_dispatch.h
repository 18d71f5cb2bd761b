// Rank 0's side of the sandbox: a batch of jobs goes to the sandbox ranks, which pull from a
// queue held here, or to an in-process verifier when the run has no sandbox ranks. Used by the
// RL coordinator for every turn and by SFT to verify augmented and broken references.
// A SANDBOX_ERROR (the infrastructure's fault) is re-queued up to `retries` times.
// Collective protocol: dispatch() announces a kSandbox phase to every rank (Control broadcast),
// and every sandbox rank runs serve_sandbox() (coordinator.h) meanwhile.
#pragma once

#include <map>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "mpi/engines.h"
#include "mpi/topology.h"

namespace leap::mpi {

// The rule for a SANDBOX_ERROR (the infrastructure's fault, never the candidate's): the job is
// verified again, up to `retries` times, before its verdict is kept. Shared by both pipelines.
class SandboxRetries {
 public:
  SandboxRetries(int retries, const Logger& log) : retries_(retries), log_(log) {}
  // True when `o` is to be verified again (and says so in the log).
  bool retry(const SandboxOutcome& o);

 private:
  int retries_;
  const Logger& log_;
  std::map<int64_t, int> attempts_;
};

class JobDispatcher {
 public:
  JobDispatcher(const Topology& topo, VerifyEngine* local_verifier, int retries, const Logger& log);
  // Verdicts for `jobs`, in no particular order (match them by uid).
  Expected<std::vector<SandboxOutcome>> dispatch(const std::vector<SandboxJob>& jobs, int64_t step, int turn);
  // Slots of all sandbox ranks as their pulls have reported them (the in-process verifier's
  // without sandbox ranks).
  int slots_seen() const;
  // Seconds jobs have held sandbox slots, over every dispatch (retried attempts included).
  double slot_seconds() const { return slot_seconds_; }
  // Jobs whose task's reference ran first (its outputs were not in the sandbox's cache).
  int64_t reference_runs() const { return reference_runs_; }

 private:
  const Topology& topo_;
  VerifyEngine* local_;
  int retries_;
  const Logger& log_;
  std::vector<int> sandbox_ranks_;
  std::map<int, int32_t> slots_of_rank_;  // the most free slots each rank has reported
  double slot_seconds_ = 0;
  int64_t reference_runs_ = 0;
};

}  // namespace leap::mpi
