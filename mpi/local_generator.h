// Rank 0's own share of generation in a streaming phase (stream_runner.h), on a thread of its
// own, so that the coordinator's loop never waits behind it. Only the coordinator's main thread
// calls MPI (MPI_THREAD_FUNNELED): generate() on the policy engine does not.
#pragma once

#include <future>
#include <optional>
#include <vector>

#include "mpi/engines.h"

namespace leap::mpi {

class LocalGenerator {
 public:
  explicit LocalGenerator(PolicyEngine& policy) : policy_(policy) {}
  ~LocalGenerator();
  LocalGenerator(const LocalGenerator&) = delete;
  LocalGenerator& operator=(const LocalGenerator&) = delete;

  bool busy() const { return running_.valid(); }
  // Starts generating `items` (requires !busy()).
  void start(std::vector<RolloutItem> items);
  // The batch's completions once it is done (and then !busy()); nothing while it runs.
  std::optional<RolloutResult> take();

 private:
  PolicyEngine& policy_;
  std::future<RolloutResult> running_;
};

}  // namespace leap::mpi
