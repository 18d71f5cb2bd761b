// Rank 0's own share of generation in a streaming phase (stream_runner.h), on a thread of its
// own, so that the coordinator's loop never waits behind it. Only the coordinator's main thread
// calls MPI (MPI_THREAD_FUNNELED): the generator thread runs PolicyEngine::generate_stream over a
// locked inbox and outbox, which the coordinator fills and empties between its polls. Items
// given join the running batch at its next step (continuous batching across hand-outs).
// Sequences to train on during the rollout (rl.overlap_training) are trained on the same thread,
// since the model is bound to it, when nothing is decoding.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "mpi/engines.h"

namespace leap::mpi {

class LocalGenerator {
 public:
  explicit LocalGenerator(PolicyEngine& policy) : policy_(policy) {}
  // Ends the phase: the thread stops once it has nothing left to decode.
  ~LocalGenerator();
  LocalGenerator(const LocalGenerator&) = delete;
  LocalGenerator& operator=(const LocalGenerator&) = delete;

  // Items given and not yet returned by take().
  int outstanding() const { return outstanding_; }
  // How many more items it can decode at once now (its batch less what it holds).
  int room() const { return policy_.generation_batch() - outstanding_; }
  // Hands items to the generator thread (started on the first call).
  void give(std::vector<RolloutItem> items);
  // Hands sequences to train on (PolicyEngine::train_early) to the thread, which trains them
  // once it has nothing to decode; the coordinator gives them only when outstanding() is 0.
  void give_training(std::vector<TrainSample> samples);
  // Sequences given to train on whose end take() has not reported yet.
  int training() const { return training_; }
  // The completions finished since the last call, the seconds spent on them and the sequences
  // trained since; nothing when there is neither. Rethrows what the generator thread threw.
  std::optional<RolloutResult> take();

 private:
  class Inbox;  // the thread's WorkSource
  void start();  // wakes the thread, started on the first call

  PolicyEngine& policy_;
  int outstanding_ = 0;  // the coordinator's count (its thread only)
  int training_ = 0;     // likewise, of sequences to train on
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RolloutItem> inbox_;  // given, not yet taken by the thread (mu_)
  std::vector<TrainSample> train_inbox_;  // likewise, to train on (mu_)
  RolloutResult outbox_;            // finished, not yet taken by the coordinator (mu_)
  bool closed_ = false;             // the phase is over (mu_)
  std::exception_ptr error_;        // what the thread threw (mu_)
  std::thread thread_;
};

}  // namespace leap::mpi
