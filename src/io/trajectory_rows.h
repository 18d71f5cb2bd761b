// Rows of the trajectory file (design.md, Trajectories): one StepRow per RL step in /steps, one
// SampleRow per turn-sample in /samples, with its texts in /text/{prompt,completion,feedback}.
// Field names are the HDF5 field names users read with h5py/pandas: renaming one is a schema
// change (bump kTrajectorySchemaVersion).
#pragma once

#include <cstdint>
#include <string>

namespace leap::io {

// 2: /steps gained cpu_s, n_resampled, train_sequences and train_positions.
// 3: /steps gained policy_busy_s, policy_wait_s, policy_drain_s, policy_idle_s, sandbox_busy_s
//    and sandbox_idle_s.
// 4: /steps gained prefill_tokens, kv_reused_tokens and n_jobs_overlapped, /samples
//    kv_reused_tokens.
// 5: /steps gained train_sequences_early.
// 6: /steps gained n_speculative, n_speculative_dropped and speculative_dropped_tokens.
// 7: /steps gained n_rollout_ahead.
inline constexpr int kTrajectorySchemaVersion = 7;

struct StepRow {
  int64_t step = 0;
  double time_s = 0, gen_s = 0, sandbox_s = 0, train_s = 0;
  double cpu_s = 0;  // CPU seconds of every rank and sandbox worker since the run began (cumulative)
  // Where the step's time went, in seconds summed over the policy ranks and over the sandbox
  // slots (design.md, The streaming pipeline): a policy rank was busy (generating or training),
  // waiting on the sandbox (nothing to generate until outstanding verdicts come back;
  // policy_drain_s of it in the end-of-step drain, after the last generation) or idle otherwise
  // (busy + wait + idle = policy ranks x time_s); a sandbox slot held a job or sat idle
  // (busy + idle = slots x time_s).
  double policy_busy_s = 0, policy_wait_s = 0, policy_drain_s = 0, policy_idle_s = 0;
  double sandbox_busy_s = 0, sandbox_idle_s = 0;
  double loss = 0, kl = 0, entropy = 0, clip_frac = 0, ratio_mean = 0, ratio_max = 0;
  double grad_norm = 0, lr = 0;
  int32_t n_groups = 0, n_easy = 0, n_hopeless = 0, n_expanded = 0, n_dropped_groups = 0;
  int32_t n_samples = 0, n_sandbox_jobs = 0;
  int32_t n_resampled = 0;  // groups drawn to replace all-zero-advantage ones (dynamic sampling)
  // Sandbox jobs sent while generation was still in flight (the pipelines' overlap, counted: 0
  // with rl.pipeline = sync).
  int32_t n_jobs_overlapped = 0;
  int64_t tokens_generated = 0;
  // Prompt tokens the policy ranks ran (prefill or extend), and prompt positions they took from
  // another sequence's KV cache instead (a kept earlier turn, a sibling's prompt): the sums of
  // /samples' prompt_tokens - kv_reused_tokens and kv_reused_tokens.
  int64_t prefill_tokens = 0, kv_reused_tokens = 0;
  int64_t train_sequences = 0;  // sequences the trainer's forward ran per epoch
  int64_t train_positions = 0;  // and their tokens (a trajectory trained once counts once)
  // Of train_sequences, those trained during the rollout (rl.overlap_training): 0 with
  // rl.pipeline = sync.
  int64_t train_sequences_early = 0;
  // Turns generated speculatively, before DCP decided their group (rl.speculative_turns; 0 with
  // rl.pipeline = sync), those of them dropped unverified because the decision did not keep
  // them, and the tokens those dropped had generated (not in tokens_generated).
  int32_t n_speculative = 0, n_speculative_dropped = 0;
  int64_t speculative_dropped_tokens = 0;
  // Turn-1 samples generated during the step before, with its weights (rl.rollout_ahead: one
  // update off the policy); 0 without it.
  int32_t n_rollout_ahead = 0;
  double mean_completion_tokens = 0, pass_turn1 = 0, pass_final = 0;
};

// Whether /steps row `st` is a committed step, `prev` being the row before it (null for the
// first): a row a reader sees before its data was written reads as zeros, while every step has at
// least one group and a larger step number than the one before. A step may have no sample rows
// (every prompt stopped before turn 1). The readers and the resume copy use this one rule.
inline bool step_row_committed(const StepRow& st, const StepRow* prev) {
  return st.n_groups > 0 && st.n_samples >= 0 && (prev == nullptr || st.step > prev->step);
}

// DCP class of the sample's group, as stored (an HDF5 enum).
enum class DcpClass : int8_t { kNone = 0, kEasy = 1, kHopeless = 2, kExpanded = 3 };

struct SampleRow {
  int64_t step = 0;
  int32_t task = 0;  // index into /tasks/id
  int32_t group = 0, sample = 0, turn = 0;
  int8_t verdict = 0;  // sandbox::Verdict value; names in the enum type
  DcpClass dcp = DcpClass::kNone;
  float reward = 0, advantage = 0;
  int32_t prompt_tokens = 0, completion_tokens = 0;
  // Of prompt_tokens, the positions taken from another sequence's KV cache (the sample's kept
  // earlier turn, a kept sequence that starts the same, or a live slot holding the same prompt)
  // instead of being run.
  int32_t kv_reused_tokens = 0;
  float speedup = 0;  // NaN where nothing was timed
  float compile_ms = 0, exec_ms = 0, max_abs_err = 0;
  int32_t mpi_rank = 0;
};

struct SampleText {
  std::string prompt, completion, feedback;
};

}  // namespace leap::io
