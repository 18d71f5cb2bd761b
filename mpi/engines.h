// What the distributed step asks of a policy replica and of a sandbox, as interfaces, so that
// the coordinator and the services (coordinator.cpp, services.cpp) move data without knowing
// the model or the verifier: the CPU and CUDA backends, the in-process sandbox and the sandbox
// ranks' worker pools all plug in here, and tests can drive the step with small engines.
#pragma once

#include <mpi.h>

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "io/checkpoint_dir.h"
#include "mpi/messages.h"

namespace leap::mpi {

// Where a streaming generator (PolicyEngine::generate_stream) gets its work and leaves its
// completions: the coordinator's queue, through MPI on a policy rank and through a locked inbox on
// rank 0's generator thread.
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // Up to `room` items to start (possibly none). wait: the generator has nothing left to decode,
  // so this blocks until items come or the phase ends. nullopt: stop (the phase is over, or the
  // source failed and keeps the reason).
  virtual std::optional<std::vector<RolloutItem>> more(int room, bool wait) = 0;
  // Completions that just finished, and the seconds spent generating since the last call.
  virtual void done(std::vector<Completion> finished, double busy_s) = 0;
};

// One replica of the policy, on every policy rank.
class PolicyEngine {
 public:
  virtual ~PolicyEngine() = default;
  // Completions for the items, each sampled with its own seed (so a sample does not depend on
  // the rank or the batch it lands in).
  virtual std::vector<Completion> generate(const std::vector<RolloutItem>& items) = 0;
  // Generates what `source` hands out until it says stop. A replica with a sampler keeps up to
  // generation_batch() sequences decoding and a finished one's slot takes the next item at once,
  // across the source's hand-outs (continuous batching); this default runs generate() on each
  // hand-out.
  virtual void generate_stream(WorkSource& source);
  // Another thread is about to call generate() (rank 0's generator in the streaming pipeline):
  // binds it to this replica's compute (threads, device) first.
  virtual void bind_calling_thread() {}
  // How many items generate() decodes together (its KV-cache slots): the streaming pipeline hands
  // out work in multiples of it.
  virtual int generation_batch() const { return 8; }
  // ppo_epochs x mini_batches updates on this rank's share. Collective over `policy`: every
  // policy rank calls it with its share (possibly empty) and the replicas stay identical.
  virtual TrainReport train(const TrainWork& work, MPI_Comm policy) = 0;
  // Training during a streaming rollout (rl.overlap_training): forward and backward of `samples`
  // (one mini-batch, one epoch) into the gradient under a loss normaliser of 1, while nothing is
  // decoding; the step's train(), with TrainWork::deferred_norm, adds the rest and steps. Local:
  // no collective. Engines that cannot (supports_train_early() false) are never asked.
  virtual bool supports_train_early() const { return false; }
  virtual void train_early(const std::vector<TrainSample>& samples);
  // Writes this rank's part of a checkpoint (mpi/checkpoint_write.h). Collective over `policy`;
  // `req` is rank 0's only. An engine without a model cannot checkpoint and says so.
  virtual Status write_checkpoint(MPI_Comm policy, const io::CheckpointRequest* req) {
    (void)policy, (void)req;
    return unsupported("this policy engine holds no model to checkpoint");
  }
  // The checksum of the flat parameters (mpi::checksum's), compared across the policy ranks.
  virtual uint64_t params_checksum() const = 0;
};

// Verifies candidates; `slots` of them at a time.
class VerifyEngine {
 public:
  virtual ~VerifyEngine() = default;
  virtual int slots() const = 0;
  // Verdicts for the jobs, in job order; runs up to slots() jobs concurrently.
  virtual std::vector<SandboxOutcome> verify(const std::vector<SandboxJob>& jobs) = 0;

  // The streaming pipeline's side: start() begins one job (the caller keeps at most slots() of
  // them started and unfinished); finished() returns the verdicts of started jobs that are done,
  // waiting up to `wait` for the first. This default runs the started jobs through verify() when
  // finished() is called, which is enough for engines that answer at once.
  virtual void start(const SandboxJob& job) { started_.push_back(job); }
  virtual std::vector<SandboxOutcome> finished(std::chrono::milliseconds wait) {
    (void)wait;
    std::vector<SandboxJob> jobs;
    jobs.swap(started_);
    return jobs.empty() ? std::vector<SandboxOutcome>{} : verify(jobs);
  }

 private:
  std::vector<SandboxJob> started_;
};

}  // namespace leap::mpi
