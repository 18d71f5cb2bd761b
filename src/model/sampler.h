// Batched generation over a KV cache: prompts of different lengths are prefilled together,
// then every unfinished sequence advances one token per decode step. Temperature, top-k,
// top-p, max new tokens, stop strings and EOS end a sequence; the stop string (or EOS) is kept
// as the last completion tokens.
//
// Recorded log-probs: for each sampled token, log p(token) under the model itself (temperature
// 1, before top-k/top-p truncation), which is exactly what Transformer::forward recomputes for
// the same sequence: the PPO ratio's old log-prob. Reproducibility: the only randomness is one
// rng.uniform() per sampled token, drawn in sequence order within a step, so the same seed,
// prompts, config and thread count give the same completions, given the same kept sequences
// (SamplerConfig::reuse_kv: extending a kept cache rounds differently from a prefill). Greedy
// (temperature 0) draws none.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/rng.h"
#include "common/status.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

namespace leap::model {

struct SamplerConfig {
  double temperature = 1.0;  // 0 = greedy (argmax)
  double top_p = 1.0;        // nucleus: smallest set of tokens with probability >= top_p
  int top_k = 0;             // 0 = no limit
  int max_new_tokens = 512;
  std::string stop;  // stop strings separated by "||"; "\n" is a newline
  bool stop_at_eos = true;
  int kv_block_tokens = 16;  // positions per KV-cache block
  // A finished sequence keeps its KV blocks (while the pool has room) for a later prompt that
  // extends it (a later turn then runs only its new tokens) or starts like it (its whole blocks
  // are shared). Keep them only while the weights stay the same (Sampler::forget_kept). A prompt's
  // logits then depend, within float rounding, on what was kept.
  bool reuse_kv = true;
  int kv_keep_sequences = 8;  // pool room beyond the slots for kept sequences, in full sequences

  // Section [sampler].
  void declare(OptionSet& opts);
  std::vector<std::string> stop_strings() const;
};

enum class StopReason { kEos, kStopString, kMaxTokens, kContextFull };
const char* stop_reason_name(StopReason r);  // "eos", "stop_string", "max_tokens", "context_full"

// What a Sampler has run since it was built: prompt tokens prefilled, prompt positions taken from
// kept KV blocks instead, and kept sequences dropped for room or by forget_kept().
struct SamplerCounts {
  int64_t prefilled_tokens = 0;
  int64_t reused_tokens = 0;
  int64_t kept_dropped = 0;
};

struct Completion {
  std::vector<int32_t> tokens;  // sampled tokens, the stop string / EOS included
  std::vector<float> logprobs;  // one per token (see above)
  StopReason stop_reason = StopReason::kMaxTokens;
  // Prompt positions this sequence got from another's KV cache instead of running them: a kept
  // sequence it extends or starts like, or a live slot holding the same prompt.
  int reused_tokens = 0;
};

// Draws one token from a row of logits (V), among ids below sample_below (0: all). Writes
// log p(token) at temperature 1 over all V to *logprob.
int32_t sample_token(const float* logits, int V, const SamplerConfig& cfg, Rng& rng,
                     float* logprob, int sample_below = 0);

class Sampler {
 public:
  // tokenizer may be null: then no stop strings, and EOS is the config's eos_token_id. With a
  // tokenizer, ids at or above its vocab_size() (padding rows) are never sampled.
  Sampler(Transformer& model, const Tokenizer* tokenizer);
  // Any of these ends a completion (generation_config.json's list); empty: the tokenizer's EOS.
  void set_eos_ids(std::vector<int32_t> ids) { eos_ids_ = std::move(ids); }
  // Identical prompts in one generate() call (a group's G samples at turn 1) are prefilled once
  // and their KV cache copied to the others (default on). Off: every prompt is prefilled.
  void set_share_prefill(bool on) { share_prefill_ = on; }
  // At most n sequences decode together (0: every prompt of a call at once). With more prompts
  // than that, a finished sequence's KV-cache slot takes the next prompt (continuous batching):
  // the batch stays full while lengths differ. Sequences with their own generators (below) are
  // the same either way; the shared-generator generate() draws in another order.
  void set_max_batch(int n) { max_batch_ = n; }
  // The longest sequence (prompt + answer) the run will make: the KV cache is sized for it when
  // first made, so that later, longer turns do not grow it (a grow drops what was kept).
  void set_context(int positions) { context_ = positions; }
  // Drops every kept sequence (SamplerConfig::reuse_kv): their keys and values were computed with
  // weights that are about to change.
  void forget_kept();
  const SamplerCounts& counts() const { return counts_; }
  ~Sampler();

  // One completion per prompt (each non-empty), in prompt order.
  Expected<std::vector<Completion>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                             const SamplerConfig& cfg, Rng& rng);
  // The same with one generator per sequence (rngs.size() == prompts.size()): a sequence's
  // draws then do not depend on the other sequences of the batch, so a sample is the same
  // whichever batch or rank generates it (the distributed step relies on this).
  Expected<std::vector<Completion>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                             const SamplerConfig& cfg, std::vector<Rng>& rngs);

 private:
  // `rng_of(b)` is the generator sequence b draws from.
  template <class RngOf>
  Expected<std::vector<Completion>> run(const std::vector<std::vector<int32_t>>& prompts,
                                        const SamplerConfig& cfg, RngOf rng_of, bool own_generators);

  Transformer* model_;
  const Tokenizer* tokenizer_;
  std::vector<int32_t> eos_ids_;
  // A finished sequence's blocks and the tokens they hold (its prompt and all but its last
  // sampled token), oldest first.
  struct Kept {
    std::vector<int32_t> tokens;
    KvBlocks blocks;
  };
  bool drop_oldest_kept();
  // The kept sequence sharing the longest start with `prompt` (-1 when none shares a block, or
  // all of a shorter one): how many positions, and whether that is all of it.
  int best_kept(const std::vector<int32_t>& prompt, int* positions, bool* whole) const;

  std::unique_ptr<KvCache> cache_;  // kept between calls, grown when too small
  std::vector<Kept> kept_;
  SamplerCounts counts_;
  // During a call: whether a prompt still waiting for a slot extends these kept tokens.
  std::function<bool(const std::vector<int32_t>&)> wanted_;
  int context_ = 0;
  bool share_prefill_ = true;
  int max_batch_ = 0;
};

}  // namespace leap::model
