// What the distributed step asks of a policy replica and of a sandbox, as interfaces, so that
// the coordinator and the services (coordinator.cpp, services.cpp) move data without knowing
// the model or the verifier: the CPU and CUDA backends, the in-process sandbox and the sandbox
// ranks' worker pools all plug in here, and tests can drive the step with small engines.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string_view>
#include <vector>

#include "io/checkpoint_dir.h"
#include "mpi/messages.h"

namespace leap::mpi {

// One replica of the policy, on every policy rank.
class PolicyEngine {
 public:
  virtual ~PolicyEngine() = default;
  // Completions for the items, each sampled with its own seed (so a sample does not depend on
  // the rank or the batch it lands in).
  virtual std::vector<Completion> generate(const std::vector<RolloutItem>& items) = 0;
  // Another thread is about to call generate() (rank 0's generator in the streaming pipeline):
  // binds it to this replica's compute (threads, device) first.
  virtual void bind_calling_thread() {}
  // How many items generate() decodes together (its KV-cache slots): the streaming pipeline hands
  // out work in multiples of it.
  virtual int generation_batch() const { return 8; }
  // ppo_epochs x mini_batches updates on this rank's share. Collective over `policy`: every
  // policy rank calls it with its share (possibly empty) and the replicas stay identical.
  virtual TrainReport train(const TrainWork& work, MPI_Comm policy) = 0;
  // With sharded optimizer state (ZeRO stage 1), a checkpoint gathers AdamW's moments onto rank 0
  // of `policy` one tensor at a time, in io::moment_order: rank 0's checkpoint writer calls
  // gather_moment for each tensor, the other ranks serve_moment_gather once. Collective; nothing
  // to do without sharding.
  virtual void gather_moment(MPI_Comm policy, const io::MomentTensor& mt, float* out) {
    (void)policy, (void)mt, (void)out;
  }
  virtual void serve_moment_gather(MPI_Comm policy) { (void)policy; }
  // The flat parameters, for the replica checksum.
  virtual const float* params() const = 0;
  virtual size_t num_params() const = 0;
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
