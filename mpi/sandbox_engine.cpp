// A batch of jobs through the sandbox service's queue; results in job order.
#include "mpi/sandbox_engine.h"

#include <future>

namespace leap::mpi {

Expected<std::unique_ptr<SandboxEngine>> SandboxEngine::start(const tasks::Suite& suite,
                                                              const sandbox::SandboxConfig& config,
                                                              const std::string& leap_binary) {
  LEAP_ASSIGN_OR_RETURN(auto service, sandbox::SandboxService::start(config, leap_binary));
  return std::unique_ptr<SandboxEngine>(new SandboxEngine(suite, std::move(service), std::max(1, config.workers)));
}

std::vector<SandboxOutcome> SandboxEngine::verify(const std::vector<SandboxJob>& jobs) {
  std::vector<std::future<sandbox::VerifyResult>> pending;
  for (const auto& j : jobs) {
    if (j.task < 0 || static_cast<size_t>(j.task) >= suite_.tasks.size()) {
      std::promise<sandbox::VerifyResult> bad;  // SANDBOX_ERROR: the infrastructure's mistake
      sandbox::VerifyResult r;
      r.feedback = "sandbox job names task index " + std::to_string(j.task) + ", not in this suite";
      bad.set_value(r);
      pending.push_back(bad.get_future());
      continue;
    }
    pending.push_back(service_->submit(suite_.tasks[static_cast<size_t>(j.task)], j.answer));
  }
  std::vector<SandboxOutcome> out;
  for (size_t i = 0; i < jobs.size(); ++i) out.push_back(to_outcome(jobs[i].uid, pending[i].get()));
  return out;
}

}  // namespace leap::mpi
