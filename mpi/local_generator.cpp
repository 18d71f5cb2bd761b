// Rank 0's generator thread and the locked hand-over between it and the coordinator's loop.
#include "mpi/local_generator.h"

#include "common/check.h"

namespace leap::mpi {

class LocalGenerator::Inbox final : public WorkSource {
 public:
  explicit Inbox(LocalGenerator& g) : g_(g) {}
  std::optional<std::vector<RolloutItem>> more(int room, bool wait) override {
    (void)room;  // the coordinator gives at most room() items
    std::unique_lock lock(g_.mu_);
    for (;;) {
      if (wait) g_.cv_.wait(lock, [&] { return !g_.inbox_.empty() || !g_.train_inbox_.empty() || g_.closed_; });
      if (g_.train_inbox_.empty()) break;
      // Given only while nothing decodes (so with wait set); trained outside the lock.
      std::vector<TrainSample> train;
      train.swap(g_.train_inbox_);
      lock.unlock();
      g_.policy_.train_early(train);
      lock.lock();
      g_.outbox_.trained += static_cast<int32_t>(train.size());
    }
    if (g_.inbox_.empty() && g_.closed_ && wait) return std::nullopt;
    std::vector<RolloutItem> out;
    out.swap(g_.inbox_);
    return out;
  }
  void done(std::vector<Completion> finished, double busy_s) override {
    std::lock_guard lock(g_.mu_);
    for (auto& c : finished) g_.outbox_.completions.push_back(std::move(c));
    g_.outbox_.busy_s += busy_s;
  }

 private:
  LocalGenerator& g_;
};

LocalGenerator::~LocalGenerator() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LocalGenerator::give(std::vector<RolloutItem> items) {
  if (items.empty()) return;
  outstanding_ += static_cast<int>(items.size());
  {
    std::lock_guard lock(mu_);
    for (auto& it : items) inbox_.push_back(std::move(it));
  }
  start();
}

void LocalGenerator::give_training(std::vector<TrainSample> samples) {
  if (samples.empty()) return;
  LEAP_CHECK(outstanding_ == 0, "rank 0's generator was given sequences to train on while it decodes");
  training_ += static_cast<int>(samples.size());
  {
    std::lock_guard lock(mu_);
    for (auto& s : samples) train_inbox_.push_back(std::move(s));
  }
  start();
}

void LocalGenerator::start() {
  cv_.notify_all();
  if (!thread_.joinable())
    thread_ = std::thread([this] {
      try {
        policy_.bind_calling_thread();  // the rank's thread count and device, not the defaults
        Inbox inbox(*this);
        policy_.generate_stream(inbox);
      } catch (...) {  // for the coordinator's thread (take()), as a future would carry it
        std::lock_guard lock(mu_);
        error_ = std::current_exception();
      }
    });
}

std::optional<RolloutResult> LocalGenerator::take() {
  RolloutResult r;
  {
    std::lock_guard lock(mu_);
    if (error_) std::rethrow_exception(error_);
    if (outbox_.completions.empty() && outbox_.trained == 0) return std::nullopt;
    std::swap(r, outbox_);
  }
  outstanding_ -= static_cast<int>(r.completions.size());
  training_ -= r.trained;
  LEAP_CHECK(training_ >= 0, "the generator trained more sequences than it was given");
  LEAP_CHECK(outstanding_ >= 0, "the generator returned more completions than it was given");
  return r;
}

}  // namespace leap::mpi
