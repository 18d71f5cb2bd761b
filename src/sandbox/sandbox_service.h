// The sandbox of one rank, as the distributed loop and `leap check` use it: a WorkerPool of
// `leap worker` processes behind one Verifier, with a blocking call and a queued one.
//
//  - verify(): blocking; any number of threads may call it at once (the pool bounds how many
//    jobs run; the rest wait for a worker);
//  - submit(): queues the verification and returns a future; `workers` dispatcher threads drain
//    the queue, so at most that many verifications are in flight from submit();
//  - the destructor finishes every queued verification, then stops the workers;
//  - a submitted job's result says how long it held its dispatcher (slot_ms), and with
//    sandbox.simulated_exec_ms (benchmarks only) a candidate that ran holds it that much longer,
//    asleep: the latency of timed GPU trials, without taking a CPU from the other ranks.
// The config's device must be resolved (resolve_device) to "cpu" or "gpu".
#pragma once

#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"

namespace leap::sandbox {

class SandboxService {
 public:
  // `leap_binary`: the `leap` executable the workers run; empty means this process's own.
  static Expected<std::unique_ptr<SandboxService>> start(const SandboxConfig& config,
                                                         const std::string& leap_binary = {});
  ~SandboxService();
  SandboxService(const SandboxService&) = delete;
  SandboxService& operator=(const SandboxService&) = delete;

  VerifyResult verify(const tasks::Task& task, std::string_view completion);
  std::future<VerifyResult> submit(tasks::Task task, std::string completion);

  bool on_gpu() const { return pool_->on_gpu(); }
  WorkerPoolStats stats() const { return pool_->stats(); }
  std::string worker_description() const { return pool_->worker_description(); }
  const ReferenceCache& reference_cache() const { return verifier_->reference_cache(); }

 private:
  SandboxService() = default;
  void dispatch();

  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<Verifier> verifier_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<VerifyResult()>> queue_;
  bool stopping_ = false;
  double simulated_exec_ms_ = 0;
  std::vector<std::thread> dispatchers_;
};

}  // namespace leap::sandbox
