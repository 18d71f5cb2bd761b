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

std::future<sandbox::VerifyResult> SandboxEngine::submit(const SandboxJob& j) {
  if (j.task < 0 || static_cast<size_t>(j.task) >= suite_.tasks.size()) {
    std::promise<sandbox::VerifyResult> bad;  // SANDBOX_ERROR: the infrastructure's mistake
    sandbox::VerifyResult r;
    r.feedback = "sandbox job names task index " + std::to_string(j.task) + ", not in this suite";
    bad.set_value(r);
    return bad.get_future();
  }
  return service_->submit(suite_.tasks[static_cast<size_t>(j.task)], j.answer);
}

std::vector<SandboxOutcome> SandboxEngine::verify(const std::vector<SandboxJob>& jobs) {
  std::vector<std::future<sandbox::VerifyResult>> pending;
  for (const auto& j : jobs) pending.push_back(submit(j));
  std::vector<SandboxOutcome> out;
  for (size_t i = 0; i < jobs.size(); ++i) out.push_back(to_outcome(jobs[i].uid, pending[i].get()));
  return out;
}

void SandboxEngine::start(const SandboxJob& job) { started_.push_back({job.uid, submit(job)}); }

std::vector<SandboxOutcome> SandboxEngine::finished(std::chrono::milliseconds wait) {
  std::vector<SandboxOutcome> out;
  // Waits on the oldest job only: every job holds a slot of its own, so the oldest is as likely
  // as any to finish first, and a sleep of `wait` at most is what the caller asked for.
  if (!started_.empty()) started_.front().result.wait_for(wait);
  for (auto it = started_.begin(); it != started_.end();) {
    if (it->result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      out.push_back(to_outcome(it->uid, it->result.get()));
      it = started_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace leap::mpi
