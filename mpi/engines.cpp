// PolicyEngine's default streaming generation: one generate() call per hand-out.
#include "mpi/engines.h"

#include "common/check.h"
#include "common/stopwatch.h"

namespace leap::mpi {

void PolicyEngine::generate_stream(WorkSource& source) {
  for (;;) {
    auto items = source.more(generation_batch(), true);
    if (!items) return;
    if (items->empty()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    auto completions = generate(*items);
    source.done(std::move(completions), seconds_since(t0));
  }
}

void PolicyEngine::train_early(const std::vector<TrainSample>& samples) {
  LEAP_FATAL("this policy engine cannot train during the rollout (" << samples.size() << " sequence(s) given)");
}

}  // namespace leap::mpi
