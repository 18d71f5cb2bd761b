// Verification of a batch of jobs on a worker pool, `slots` at a time.
#include "mpi/sandbox_engine.h"

#include <atomic>
#include <thread>

namespace leap::mpi {

Expected<std::unique_ptr<SandboxEngine>> SandboxEngine::start(const tasks::Suite& suite,
                                                              const sandbox::SandboxConfig& config,
                                                              const std::string& leap_binary) {
  sandbox::WorkerPoolOptions options;
  options.config = config;
  options.leap_binary = leap_binary;
  LEAP_ASSIGN_OR_RETURN(auto pool, sandbox::WorkerPool::start(options));
  return std::unique_ptr<SandboxEngine>(new SandboxEngine(suite, std::move(pool), config));
}

SandboxEngine::SandboxEngine(const tasks::Suite& suite, std::unique_ptr<sandbox::WorkerPool> pool,
                             const sandbox::SandboxConfig& config)
    : suite_(suite), pool_(std::move(pool)), verifier_(*pool_, config), slots_(std::max(1, config.workers)) {}

std::vector<SandboxOutcome> SandboxEngine::verify(const std::vector<SandboxJob>& jobs) {
  std::vector<SandboxOutcome> out(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const SandboxJob& j = jobs[i];
      if (j.task < 0 || static_cast<size_t>(j.task) >= suite_.tasks.size()) {
        sandbox::VerifyResult bad;
        bad.feedback = "sandbox job names task index " + std::to_string(j.task) + ", not in this suite";
        out[i] = to_outcome(j.uid, bad);  // SANDBOX_ERROR: the infrastructure's mistake
        continue;
      }
      out[i] = to_outcome(j.uid, verifier_.verify(suite_.tasks[static_cast<size_t>(j.task)], j.answer));
    }
  };
  std::vector<std::thread> threads;
  const size_t n = std::min(jobs.size(), static_cast<size_t>(slots_));
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace leap::mpi
