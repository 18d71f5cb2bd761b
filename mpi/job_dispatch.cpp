// The pull-based job queue on rank 0, and the in-process fallback.
#include "mpi/job_dispatch.h"

#include <algorithm>
#include <deque>
#include <map>

#include "common/check.h"
#include "sandbox/verdict.h"

namespace leap::mpi {

bool SandboxRetries::retry(const SandboxOutcome& o) {
  if (o.verdict != static_cast<int32_t>(sandbox::Verdict::kSandboxError) || attempts_[o.uid]++ >= retries_) return false;
  log_.warn("sandbox error on job {} (retrying): {}", o.uid, o.feedback.substr(0, 200));
  return true;
}

int JobDispatcher::slots_seen() const {
  if (sandbox_ranks_.empty()) return local_->slots();
  int n = 0;
  for (const auto& [rank, slots] : slots_of_rank_) n += slots;
  return n;
}

JobDispatcher::JobDispatcher(const Topology& topo, VerifyEngine* local_verifier, int retries, const Logger& log)
    : topo_(topo), local_(local_verifier), retries_(retries), log_(log), sandbox_ranks_(topo.world_ranks_of(Role::kSandbox)) {
  LEAP_CHECK(!sandbox_ranks_.empty() || local_ != nullptr, "without sandbox ranks rank 0 needs an in-process verifier");
}

Expected<std::vector<SandboxOutcome>> JobDispatcher::dispatch(const std::vector<SandboxJob>& jobs, int64_t step,
                                                              int turn) {
  Control c{Control::Kind::kSandbox, step, turn};
  broadcast(c, 0, topo_.world);
  std::deque<SandboxJob> queue(jobs.begin(), jobs.end());
  SandboxRetries retries(retries_, log_);
  std::map<int64_t, const SandboxJob*> by_uid;
  for (const auto& j : jobs) by_uid[j.uid] = &j;
  std::vector<SandboxOutcome> done;
  auto accept = [&](const SandboxOutcome& o) {
    slot_seconds_ += o.slot_ms / 1000;
    reference_runs_ += o.reference_ran;
    if (retries.retry(o)) queue.push_back(*by_uid.at(o.uid));
    else done.push_back(o);
  };

  if (sandbox_ranks_.empty()) {
    while (!queue.empty()) {
      std::vector<SandboxJob> batch(queue.begin(), queue.end());
      queue.clear();
      for (const auto& o : local_->verify(batch)) accept(o);
    }
    return done;
  }

  // Each message of a sandbox rank carries its finished results and its free slots. A rank that
  // asks while the queue is empty waits for a retry or for the end-of-batch reply.
  std::map<int, int32_t> waiting;  // world rank -> free slots, ranks blocked on a reply
  size_t in_flight = 0;
  while (done.size() < jobs.size() || waiting.size() < sandbox_ranks_.size()) {
    int from = -1;
    auto msg = recv<SandboxResults>(MPI_ANY_SOURCE, topo_.world, &from);
    if (!msg) return msg.status().with_context("from sandbox rank " + std::to_string(from));
    in_flight -= msg->results.size();
    for (const auto& o : msg->results) accept(o);
    waiting[from] = msg->free_slots;
    slots_of_rank_[from] = std::max(slots_of_rank_[from], msg->free_slots);
    for (auto it = waiting.begin(); it != waiting.end() && !queue.empty();) {
      SandboxJobs batch;
      while (!queue.empty() && static_cast<int32_t>(batch.jobs.size()) < std::max(1, it->second)) {
        batch.jobs.push_back(queue.front());
        queue.pop_front();
      }
      in_flight += batch.jobs.size();
      send(batch, it->first, topo_.world);
      it = waiting.erase(it);
    }
  }
  LEAP_CHECK(in_flight == 0 && queue.empty(), "sandbox queue not drained");
  for (const auto& [rank, slots] : waiting) send(SandboxJobs{}, rank, topo_.world);  // the batch is done
  return done;
}

}  // namespace leap::mpi
