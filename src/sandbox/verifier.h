// The verifier (design.md, Verification): turns one completion for one task into a VerifyResult.
// Syntax and launch-plan checks run here, before any job; compile and execution run through a
// JobChannel (a worker pool in production); the comparison against cached reference outputs
// runs here, after the candidate's worker has finished.
//
// Thread-safe: many threads may call verify() at once; the channel bounds the concurrency.
#pragma once

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "sandbox/job_channel.h"
#include "sandbox/reference_cache.h"
#include "sandbox/result_cache.h"
#include "sandbox/sandbox_config.h"
#include "sandbox/verdict.h"

namespace leap::sandbox {

class Verifier {
 public:
  // `channel` must outlive the verifier.
  Verifier(JobChannel& channel, const SandboxConfig& config);

  VerifyResult verify(const tasks::Task& task, std::string_view completion);

  const ReferenceCache& reference_cache() const { return cache_; }
  const ResultCache& result_cache() const { return results_; }

 private:
  std::vector<TrialSpec> trials_for(uint64_t round) const;
  // Reference outputs of each trial (cached); SANDBOX_ERROR outcome when the reference fails.
  // *ran becomes true when this call ran the reference (some trial's outputs were not cached and
  // no other verification of the task was already running it: then this one waits for that).
  ExecOutcome reference_outputs(const tasks::Task& task, const std::vector<TrialSpec>& trials,
                                std::vector<std::shared_ptr<const Outputs>>* out, bool* ran);
  // Runs the reference on the trials whose outputs `out` lacks, and caches them.
  ExecOutcome run_reference(const tasks::Task& task, const std::vector<TrialSpec>& trials,
                            std::vector<std::shared_ptr<const Outputs>>* out, bool* ran);
  // Runs the candidate on `trials` and compares; fills verdict, feedback, errors and times.
  void run_and_compare(const tasks::Task& task, const Answer& answer,
                       const std::vector<TrialSpec>& trials, bool time, VerifyResult* result,
                       JobReport* report);

  JobChannel& channel_;
  SandboxConfig config_;
  ReferenceCache cache_;
  ResultCache results_;
  // The reference runs in flight, by task and trials: what a verification of the same task
  // waits for (the service's slots verify on several threads).
  struct ReferenceRun {
    ExecOutcome outcome;
    std::vector<std::shared_ptr<const Outputs>> outputs;
  };
  std::mutex inflight_mutex_;
  std::map<std::string, std::shared_future<ReferenceRun>> inflight_;
};

// Cuts `text` to at most `max_bytes` bytes on a UTF-8 boundary, marking the cut.
std::string bound_feedback(std::string text, size_t max_bytes);

}  // namespace leap::sandbox
