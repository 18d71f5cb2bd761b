// Batched generation over a KV cache: prompts of different lengths are prefilled together,
// then every unfinished sequence advances one token per decode step. Temperature, top-k,
// top-p, max new tokens, stop strings and EOS end a sequence; the stop string (or EOS) is kept
// as the last completion tokens.
//
// Recorded log-probs: for each sampled token, log p(token) under the model's distribution at
// the sampling temperature (log softmax(logits / T); T = 1 when greedy), before top-k/top-p
// truncation, which is what Transformer::forward recomputes for the same sequence at
// set_logprob_temperature(logprob_temperature(cfg)): the PPO ratio's old log-prob.
// Reproducibility: the only randomness is one rng.uniform() per sampled token, drawn in sequence
// order within a step, so the same seed, prompts, config and thread count give the same
// completions, given the same kept sequences (SamplerConfig::reuse_kv: extending a kept cache
// rounds differently from a prefill). Greedy (temperature 0) draws none.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/token_select.h"
#include "common/config.h"
#include "common/rng.h"
#include "common/status.h"
#include "model/float_arena.h"
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
  // Sequences a policy rank decodes together (the KV cache's slots); 0: train.micro_batch_seqs.
  // Prompts are still prefilled at most train.micro_batch_seqs at a time (Sampler::
  // set_prefill_batch), so a decoding batch larger than the training micro-batch costs only its
  // KV cache and decode scratch, not a larger activation arena.
  int batch_seqs = 0;
  // A finished sequence keeps its KV blocks (while the pool has room) for a later prompt that
  // extends it (a later turn then runs only its new tokens) or starts like it (its whole blocks
  // are shared). Keep them only while the weights stay the same (Sampler::forget_kept). A prompt's
  // logits then depend on what was kept: within float rounding with an fp32 cache, by bf16
  // rounding with a bf16 one (an extend reads rounded keys, a prefill its own fp32 ones).
  bool reuse_kv = true;
  int kv_keep_sequences = 8;  // pool room beyond the slots for kept sequences, in full sequences
  // "auto" (bf16 on a device backend, fp32 on the CPU), "fp32" or "bf16" (kv_cache_dtype()).
  std::string kv_cache_dtype = "auto";

  // Section [sampler].
  void declare(OptionSet& opts);
  // What one option's range cannot say: a temperature is 0 (greedy) or at least
  // kMinTemperature.
  Status validate() const;
  // Below it 1 / T leaves the float range the samplers and the trainer compute in (about 3e-39),
  // and long before that the distribution is argmax in all but name: use 0.
  static constexpr double kMinTemperature = 1e-3;
  std::vector<std::string> stop_strings() const;
};

// The token rule of these settings (backend/token_select.h).
inline backend::TokenRule token_rule(const SamplerConfig& c) {
  return {.temperature = c.temperature, .top_p = c.top_p, .top_k = c.top_k};
}
// The temperature of the recorded log-probs: sampler.temperature, or 1 when greedy.
inline double logprob_temperature(const SamplerConfig& c) {
  return c.temperature > 0.0 ? c.temperature : 1.0;
}
// The KV cache's storage for a backend: sampler.kv_cache_dtype, with "auto" bf16 where the
// backend's memory is a device's (the CUDA backend, whose GEMMs already read bf16) and fp32 on
// the CPU, where the cache is small and fp32 keeps the CPU's results as they were.
backend::KvDtype kv_cache_dtype(const SamplerConfig& c, bool device_backend);

// The rule's draw for one token from `rng`: one uniform per sampled token; greedy draws none.
inline double token_draw(const SamplerConfig& c, Rng& rng) {
  return c.temperature > 0.0 ? rng.uniform() : 0.0;
}

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
// log p(token) at logprob_temperature(cfg) over all V to *logprob.
int32_t sample_token(const float* logits, int V, const SamplerConfig& cfg, Rng& rng,
                     float* logprob, int sample_below = 0);

class Sampler {
 public:
  class Session;
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
  // At most n prompts are prefilled in one forward (0: every prompt admitted at once). A prefill
  // runs the training forward over (prompts, longest prompt), so this bounds the activation arena
  // it needs when the decoding batch is larger than the training micro-batch.
  void set_prefill_batch(int n) { prefill_batch_ = n; }
  // The longest sequence (prompt + answer) the run will make: the KV cache is sized for it when
  // first made, so that later, longer turns do not grow it (a grow drops what was kept).
  void set_context(int positions) { context_ = positions; }
  // Drops every kept sequence (SamplerConfig::reuse_kv): their keys and values were computed with
  // weights that are about to change.
  void forget_kept();
  const SamplerCounts& counts() const { return counts_; }
  ~Sampler();

  // Opens a session of continuous batching (Session, below): up to `slots` sequences decode at
  // once (at least 1), and prompts may join while others decode. shared_rng: every sequence draws
  // from it, in row order; null: each add() brings its own generator. longest_prompt sizes the KV
  // cache up front (0: the context set by set_context). One session at a time; the sampler
  // outlives it.
  std::unique_ptr<Session> open(const SamplerConfig& cfg, int slots, Rng* shared_rng = nullptr,
                                int longest_prompt = 0);

  // One completion per prompt (each non-empty), in prompt order.
  Expected<std::vector<Completion>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                             const SamplerConfig& cfg, Rng& rng);
  // The same with one generator per sequence (rngs.size() == prompts.size()): a sequence's
  // draws then do not depend on the other sequences of the batch, so a sample is the same
  // whichever batch or rank generates it, up to the logits' rounding: GEMM blocking, and whether
  // its prompt was prefilled, copied from a live sibling or extended from a kept one (bf16
  // rounding with a bf16 KV cache; docs/design.md, the paged KV cache). Each sequence draws from
  // a copy of its generator: `rngs` is not advanced.
  Expected<std::vector<Completion>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                             const SamplerConfig& cfg, const std::vector<Rng>& rngs);

 private:
  // Adds every prompt to a session, steps it until idle, and returns the completions in order.
  Expected<std::vector<Completion>> run(const std::vector<std::vector<int32_t>>& prompts,
                                        const SamplerConfig& cfg, Rng* shared_rng, const std::vector<Rng>* rngs);
  // Whether prompt `index` can be sampled: non-empty, ids in the vocabulary, room in the context.
  Status check_prompt(const std::vector<int32_t>& prompt, int index) const;
  // The pool for `slots` sequences of `positions`, made or grown (a grow drops what was kept).
  void reserve(int slots, int positions, const SamplerConfig& cfg);

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
  // A kept sequence whose tokens begin with the whole prompt (a sibling of the group that has
  // finished), or -1.
  int kept_holding(const std::vector<int32_t>& prompt) const;

  std::unique_ptr<KvCache> cache_;  // kept between calls, grown when too small
  std::vector<Kept> kept_;
  SamplerCounts counts_;
  // During a session: whether a prompt still waiting for a slot extends these kept tokens.
  std::function<bool(const std::vector<int32_t>&)> wanted_;
  int context_ = 0;
  bool share_prefill_ = true;
  int max_batch_ = 0;
  int prefill_batch_ = 0;
};

// A session of continuous batching (Sampler::open). add() queues a prompt at any time; each step()
// admits waiting prompts into free KV-cache slots (a prefill, a copy of a live slot holding the
// same prompt, or an extend of a kept sequence), samples one token for every live sequence and
// decodes those that go on. A finished sequence's slot takes the next waiting prompt at the next
// step, so the batch stays full across the caller's batches of work (the streaming pipeline adds
// work as it arrives). What a sequence samples depends only on its prompt, its generator (with
// one per sequence) and float rounding from the batch it decodes in.
class Sampler::Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a prompt: non-empty, ids below the vocabulary, shorter than max_position_embeddings.
  // Its completion comes back from take_finished() under `tag`. `rng` is its own generator
  // (unused when the session has a shared one).
  Status add(std::vector<int32_t> prompt, int64_t tag, Rng rng = Rng());
  // Admits waiting prompts into free slots, samples a token for every live sequence, decodes.
  Status step();
  bool idle() const { return seqs_.empty(); }
  int live() const { return static_cast<int>(seqs_.size() - waiting_.size()); }
  int waiting() const { return static_cast<int>(waiting_.size()); }
  int slots() const { return S_; }
  // The completions finished since the last call, with their tags, in the order they finished.
  std::vector<std::pair<int64_t, Completion>> take_finished();

 private:
  friend class Sampler;
  Session(Sampler& sampler, const SamplerConfig& cfg, int slots, Rng* shared_rng);
  Status admit();
  // Which waiting prompts take the free slots: with a generator per sequence, those that extend
  // a kept sequence first (few new blocks, and admitting them before others prefill keeps their
  // blocks from being reclaimed), then the rest, each in add order; with a shared generator, add
  // order (the draws follow it).
  std::vector<int> admission(size_t n) const;

  struct Seq {
    std::vector<int32_t> prompt;
    int64_t tag = 0;
    Rng rng;
    int distinct = 0;  // identical prompts (share_prefill) have one entry of distinct_
    Completion c;
    std::string text;  // the completion's bytes so far, for stop strings
  };
  // Identical prompts waiting or decoding: the first admitted runs the prompt, the others copy
  // the slot of one still live, and all take its next-token logits. An identical prompt added
  // while one is live joins it (the streaming pipeline hands a group's samples out a few at a
  // time); once none is left, the next is prefilled again or shares a kept sequence's blocks.
  struct Distinct {
    std::vector<int32_t> prompt;
    int waiting = 0, live = 0;
    std::vector<float> logits;  // once its first is admitted
  };

  Sampler& s_;
  SamplerConfig cfg_;
  Rng* shared_rng_;
  int S_, V_, sample_below_, max_positions_;
  std::vector<int32_t> eos_;
  std::vector<std::string> stops_;
  std::map<int, Seq> seqs_;   // waiting and live sequences, by add order
  std::vector<int> waiting_;  // not admitted yet, in add order
  int next_seq_ = 0;
  std::map<int, Distinct> distinct_;
  int next_distinct_ = 0;
  std::vector<int> slot_seq_;        // the sequence a slot holds, -1: free
  std::vector<int32_t> free_slots_;  // popped from the back: slot 0 first
  // Row r of logits_ (backend memory: a device backend samples them where they are, and only
  // the ids and log-probabilities come back) holds the next-token logits of sequence row_seq_[r]
  // in slot row_slot_[r].
  FloatArena logits_arena_;
  float* logits_ = nullptr;
  std::vector<int32_t> row_slot_;
  std::vector<int> row_seq_;
  std::vector<std::pair<int64_t, Completion>> finished_;
};

}  // namespace leap::model
