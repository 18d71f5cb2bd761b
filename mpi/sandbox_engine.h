// The sandbox behind the VerifyEngine interface: a SandboxService (a Verifier over a pool of
// `leap worker` processes) verifying up to `slots` candidates at once. Used by sandbox ranks,
// and by rank 0 itself when a run has no sandbox ranks.
#pragma once

#include <future>
#include <memory>

#include "mpi/engines.h"
#include "mpi/outcome.h"
#include "sandbox/sandbox_service.h"
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
  void start(const SandboxJob& job) override;
  std::vector<SandboxOutcome> finished(std::chrono::milliseconds wait) override;

 private:
  SandboxEngine(const tasks::Suite& suite, std::unique_ptr<sandbox::SandboxService> service, int slots)
      : suite_(suite), service_(std::move(service)), slots_(slots) {}
  // The job queued on the service, or a SANDBOX_ERROR at once for a task outside the suite.
  std::future<sandbox::VerifyResult> submit(const SandboxJob& job);
  struct Started {
    int64_t uid;
    std::future<sandbox::VerifyResult> result;
  };
  const tasks::Suite& suite_;
  std::unique_ptr<sandbox::SandboxService> service_;
  int slots_;
  std::vector<Started> started_;
};

}  // namespace leap::mpi
