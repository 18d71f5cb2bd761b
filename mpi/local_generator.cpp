// A generation batch on a worker thread, collected without blocking.
#include "mpi/local_generator.h"

#include <chrono>

#include "common/check.h"

namespace leap::mpi {

LocalGenerator::~LocalGenerator() {
  if (running_.valid()) running_.wait();
}

void LocalGenerator::start(std::vector<RolloutItem> items) {
  LEAP_CHECK(!busy(), "LocalGenerator::start while a batch runs");
  running_ = std::async(std::launch::async, [this, items = std::move(items)] {
    policy_.bind_calling_thread();  // the rank's thread count and device, not the defaults
    const auto t0 = std::chrono::steady_clock::now();
    RolloutResult r;
    r.completions = policy_.generate(items);
    r.busy_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  });
}

std::optional<RolloutResult> LocalGenerator::take() {
  if (!running_.valid() || running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  return running_.get();
}

}  // namespace leap::mpi
