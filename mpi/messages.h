// Typed messages between the coordinator (world rank 0), the rollout/trainer ranks and the
// sandbox ranks. This file and messages.cpp are the only place that knows the wire format and
// the tags: callers send and receive structs.
//
// Flow of one turn (docs/design.md, One RL step):
//   coordinator --RolloutWork--> policy ranks --RolloutResult--> coordinator
//   sandbox ranks --SandboxResults (results so far + free slots)--> coordinator
//   coordinator --SandboxJobs--> sandbox ranks (empty: the turn is done)
// The job queue lives on the coordinator and sandbox ranks pull from it, so no sandbox rank
// idles while jobs wait, and a rank that pulls more finishes more.
// A streaming phase (rl.pipeline = stream, mpi/stream_runner.h) uses the same messages: a policy
// rank sends a RolloutResult as completions finish, with a request for `want` items when it has
// free slots and no request open, answered when work exists; a sandbox rank sends
// SandboxResults as each job finishes, and the coordinator sends it jobs while it has free slots
// (credits); an empty RolloutWork or SandboxJobs ends the phase.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace leap::mpi {

enum class Tag : int {
  kControl = 100,
  kRolloutWork,
  kRolloutResult,
  kSandboxJobs,
  kSandboxResults,
  kTrainWork,
  kTrainReport,
  kError,
};

// Step-level instructions from the coordinator to every rank.
struct Control {
  // kCpuTime: every rank adds its process tree's CPU seconds into a sum on rank 0 (MPI_Reduce).
  enum class Kind : int32_t {
    kRollout = 0, kSandbox = 1, kTrain = 2, kCheckReplicas = 3, kStop = 4, kCpuTime = 5,
    kCheckpoint = 6,     // every policy rank writes its part of a checkpoint
    kStream = 7          // the turns of a step as one streaming phase (rl.pipeline = stream)
  } kind = Kind::kStop;
  int64_t step = 0;
  int32_t turn = 0;
};

struct RolloutItem {
  int64_t uid = 0;      // unique per (step, group, sample, turn)
  int32_t task = 0;     // index into the suite
  std::vector<int32_t> prompt_ids;  // the whole prompt of this turn, as ids (rank 0 encodes it)
  uint64_t seed = 0;    // sampling seed for this item: results do not depend on the rank
};

struct Completion {
  int64_t uid = 0;
  std::string text;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> completion_tokens;
  std::vector<float> logprobs;  // behaviour-policy log-probability of each completion token
  int32_t kv_reused_tokens = 0;  // prompt positions the rank's kept KV cache held (not prefilled)
};
struct RolloutResult {
  std::vector<Completion> completions;
  // In a streaming phase: a request for `want` more items (0: none, or one is already open).
  int32_t want = 0;
  double busy_s = 0;  // seconds the rank spent generating these completions
  // In a streaming phase: training sequences the rank finished since its last message (the
  // hand-out's `train`, rl.overlap_training); the rank is free again.
  int32_t trained = 0;
};

struct SandboxJob {
  int64_t uid = 0;
  int32_t task = 0;
  std::string answer;  // the whole completion; the sandbox extracts the answer itself
};
struct SandboxJobs {
  std::vector<SandboxJob> jobs;  // empty: this turn's queue is drained, stop asking
};
struct SandboxOutcome {
  int64_t uid = 0;
  int32_t verdict = 0;
  double max_abs_err = 0, compile_ms = 0, exec_ms = 0;
  double speedup = -1;  // < 0: not timed
  std::string feedback;
  double slot_ms = 0;  // how long the job held its sandbox slot (the busy-time accounting)
  int32_t reference_ran = 0;  // 1: the task's reference ran first (its outputs were not cached)
};
// A sandbox rank's pull: the results of its last jobs (none on its first pull of a turn) and
// how many jobs it can start now. One message type for both, so the coordinator serves pulls
// in arrival order from a single tag.
struct SandboxResults {
  std::vector<SandboxOutcome> results;
  int32_t free_slots = 0;
};

struct TrainSample {
  std::vector<int32_t> tokens;      // prompt + completion
  int32_t prompt_len = 0;           // loss only on tokens[prompt_len:]
  std::vector<float> old_logprobs;  // per completion token (per span token, spans in order)
  float advantage = 0;
  int32_t mini_batch = 0;           // which of the step's mini-batches it belongs to
  // A whole trajectory as one sequence (rl.train_trajectory_once): when non-empty, the loss is on
  // the spans [span_start[k], span_start[k] + span_len[k]) (each turn's sampled tokens) with
  // advantage span_advantage[k]; prompt_len and advantage are then unused.
  std::vector<int32_t> span_start, span_len;
  std::vector<float> span_advantage;
};
// A hand-out of a streaming phase: items to generate, or sequences of groups already scored to
// train on while the rollout goes on (rl.overlap_training: forward and backward into the
// gradient, under the loss normaliser of 1; PolicyEngine::train_early). Both empty: the phase is
// over.
struct RolloutWork {
  std::vector<RolloutItem> items;
  std::vector<TrainSample> train;
};
// A rank's share of the step's training samples. Every policy rank receives one (possibly
// empty) and takes part in every mini-batch's collectives: the loss normaliser and the gradient
// are summed across ranks, so a rank without samples contributes zeros.
struct TrainWork {
  std::vector<TrainSample> samples;
  int32_t mini_batches = 1;
  int32_t ppo_epochs = 1;
  // The step trains during the rollout (rl.overlap_training; one mini-batch and epoch): the
  // gradient was and is accumulated under a normaliser of 1, whatever train_early() already
  // added, and the optimizer step applies 1 / the global normaliser. The same on every rank.
  bool deferred_norm = false;
};
// What a rank learned from its share, summed by the coordinator.
struct TrainReport {
  double loss = 0, tokens = 0, clipped = 0, ratio_sum = 0, ratio_max = 0, kl_sum = 0, neg_logp_sum = 0;
  double grad_norm = 0, lr = 0;  // the same on every rank: taken from any one
  double busy_s = 0;  // seconds in train(), summed over ranks
  // Training during the rollout (PolicyEngine::train_early): its seconds and sequences, summed
  // over ranks; its loss and statistics are in the fields above.
  double early_s = 0;
  int64_t early_sequences = 0;
  void merge(const TrainReport& o) {
    busy_s += o.busy_s;
    early_s += o.early_s;
    early_sequences += o.early_sequences;
    loss += o.loss;
    tokens += o.tokens;
    clipped += o.clipped;
    ratio_sum += o.ratio_sum;
    ratio_max = ratio_max > o.ratio_max ? ratio_max : o.ratio_max;
    kl_sum += o.kl_sum;
    neg_logp_sum += o.neg_logp_sum;
  }
};

struct ErrorReport {
  int32_t rank = 0;
  std::string message;
};

// Blocking send / receive of one typed message. recv() fails (internal_error) on a corrupt
// message; `source` may be MPI_ANY_SOURCE, and *from receives the actual sender.
template <class T>
void send(const T& msg, int dest, MPI_Comm comm);
template <class T>
Expected<T> recv(int source, MPI_Comm comm, int* from = nullptr);

// Non-blocking: the message when one from `source` is waiting, nothing otherwise.
template <class T>
std::optional<Expected<T>> try_recv(int source, MPI_Comm comm, int* from = nullptr);

// Non-blocking sends whose bytes stay here until MPI is done with them. The streaming phase's
// coordinator sends sandbox jobs this way: a sandbox rank may be sending verdicts at the same
// moment, and two blocking sends of messages above the eager limit, each waiting for the other
// side's receive, would deadlock.
class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox() { flush(); }
  template <class T>
  void send(const T& msg, int dest, MPI_Comm comm);
  // Forgets the sends MPI has finished.
  void progress();
  // Waits for every send.
  void flush();

 private:
  struct Pending {
    std::vector<uint8_t> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<Pending> pending_;  // a list: the bytes must not move while MPI reads them
};

// Every rank of `comm` gets root's message (collective).
template <class T>
void broadcast(T& msg, int root, MPI_Comm comm);

// Encoding alone, for tests of the wire format.
template <class T>
std::vector<uint8_t> encode(const T& msg);
template <class T>
Expected<T> decode(const std::vector<uint8_t>& bytes);

}  // namespace leap::mpi
