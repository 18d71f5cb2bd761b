// The sandbox behind the VerifyEngine interface: a Verifier over a pool of worker processes,
// verifying up to `slots` candidates at once (one thread per running job; the pool bounds the
// concurrency and isolates every candidate in a worker process). Used by sandbox ranks, and by
// the coordinator itself when a run has no sandbox ranks.
#pragma once

#include <memory>

#include "mpi/engines.h"
#include "mpi/outcome.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"
#include "tasks/suite.h"

namespace leap::mpi {

class SandboxEngine final : public VerifyEngine {
 public:
  // Starts the worker processes; `config.device` must be resolved (cpu or gpu). The workers run
  // `leap_binary worker` (empty: this process's own executable, i.e. `leap`).
  static Expected<std::unique_ptr<SandboxEngine>> start(const tasks::Suite& suite,
                                                        const sandbox::SandboxConfig& config,
                                                        const std::string& leap_binary = "");
  int slots() const override { return slots_; }
  std::vector<SandboxOutcome> verify(const std::vector<SandboxJob>& jobs) override;

 private:
  SandboxEngine(const tasks::Suite& suite, std::unique_ptr<sandbox::WorkerPool> pool,
                const sandbox::SandboxConfig& config);
  const tasks::Suite& suite_;
  std::unique_ptr<sandbox::WorkerPool> pool_;
  sandbox::Verifier verifier_;
  int slots_;
};

}  // namespace leap::mpi
