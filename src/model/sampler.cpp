// Sampler: token selection (temperature, top-k, top-p) and the batched decode loop.
#include "model/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"

namespace leap::model {

void SamplerConfig::declare(OptionSet& opts) {
  opts.add("sampler.temperature", &temperature, 1.0, "Sampling temperature; 0 = greedy.",
           {.min = 0.0});
  opts.add("sampler.top_p", &top_p, 1.0,
           "Nucleus sampling: keep the most likely tokens up to this mass.",
           {.min = 0.0, .max = 1.0});
  opts.add("sampler.top_k", &top_k, 0, "Keep only the k most likely tokens; 0 = all.", {.min = 0});
  opts.add("sampler.max_new_tokens", &max_new_tokens, 512, "Most tokens generated per completion.",
           {.min = 1});
  opts.add("sampler.stop", &stop, std::string(""),
           "Stop strings separated by '||' (\\n for a newline); the completion ends with the first "
           "one.");
  opts.add("sampler.stop_at_eos", &stop_at_eos, true, "End a completion at the EOS token.");
  opts.add("sampler.kv_block_tokens", &kv_block_tokens, 16,
           "Positions per block of the paged KV cache.", {.min = 1});
  opts.add("sampler.kv_keep_sequences", &kv_keep_sequences, 8,
           "Full-length sequences' worth of KV blocks beyond the decoding slots, for finished "
           "sequences kept for their next turn (sampler.reuse_kv); 0: keep them only in what the "
           "live sequences leave free.", {.min = 0});
  opts.add("sampler.reuse_kv", &reuse_kv, true,
           "Keep a finished sequence's KV cache for a later turn of the same step whose prompt "
           "extends it (token-append prompts), so that turn runs only its new tokens.");
}

std::vector<std::string> SamplerConfig::stop_strings() const {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= stop.size()) {
    size_t end = stop.find("||", start);
    if (end == std::string::npos) end = stop.size();
    std::string s;
    for (size_t i = start; i < end; ++i) {
      if (stop[i] == '\\' && i + 1 < end && stop[i + 1] == 'n') {
        s.push_back('\n');
        ++i;
      } else {
        s.push_back(stop[i]);
      }
    }
    if (!s.empty()) out.push_back(s);
    start = end + 2;
  }
  return out;
}

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kEos:
      return "eos";
    case StopReason::kStopString:
      return "stop_string";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kContextFull:
      return "context_full";
  }
  return "?";
}

int32_t sample_token(const float* logits, int V, const SamplerConfig& cfg, Rng& rng,
                     float* logprob, int sample_below) {
  // Log-probabilities are over all V rows (what the training forward computes); only ids below
  // sample_below can be drawn.
  const int n = sample_below > 0 ? std::min(sample_below, V) : V;
  float mx = logits[0];
  for (int v = 1; v < V; ++v) mx = std::max(mx, logits[v]);
  double sum = 0.0;
  for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v] - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  int32_t chosen = 0;
  if (cfg.temperature <= 0.0) {
    chosen = static_cast<int32_t>(std::max_element(logits, logits + n) - logits);  // first maximum
  } else {
    // Candidates ordered by logit (ties by id) when truncation needs an order.
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    size_t keep = idx.size();
    if (cfg.top_k > 0 && cfg.top_k < n) {
      keep = static_cast<size_t>(cfg.top_k);
      std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(),
                        by_logit);
    } else if (cfg.top_p < 1.0) {
      std::sort(idx.begin(), idx.end(), by_logit);
    }
    const double inv_t = 1.0 / cfg.temperature;
    std::vector<double> w(keep);
    double total = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      w[i] = std::exp((static_cast<double>(logits[idx[i]]) - mx) * inv_t);
      total += w[i];
    }
    if (cfg.top_p < 1.0) {
      double acc = 0.0;
      size_t cut = keep;
      for (size_t i = 0; i < keep; ++i) {
        acc += w[i];
        if (acc >= cfg.top_p * total) {
          cut = i + 1;
          break;
        }
      }
      keep = cut;
      total = acc;
    }
    double u = rng.uniform() * total;
    chosen = idx[keep - 1];
    for (size_t i = 0; i < keep; ++i) {
      u -= w[i];
      if (u < 0) {
        chosen = idx[i];
        break;
      }
    }
  }
  *logprob = logits[chosen] - lse;
  return chosen;
}

Sampler::Sampler(Transformer& model, const Tokenizer* tokenizer)
    : model_(&model), tokenizer_(tokenizer) {}
Sampler::~Sampler() { forget_kept(); }

void Sampler::forget_kept() {
  while (drop_oldest_kept()) {
  }
}

bool Sampler::drop_oldest_kept() {
  if (kept_.empty()) return false;
  // The oldest that no waiting prompt of the running call extends, else the oldest.
  size_t e = 0;
  if (wanted_)
    while (e < kept_.size() && wanted_(kept_[e].tokens)) ++e;
  if (e == kept_.size()) e = 0;
  cache_->release(kept_[e].blocks);
  kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(e));
  ++counts_.kept_dropped;
  return true;
}

int Sampler::best_kept(const std::vector<int32_t>& prompt, int* positions, bool* whole) const {
  // The kept sequence sharing the longest prefix with the prompt, at most all but its last token
  // (whose logits the extend must produce). A later turn of that sample extends all of it (whole);
  // another prompt that starts the same way (a sibling of the group, or a turn whose prompt was
  // shortened to fit) shares at least a block of it.
  int best = -1;
  *positions = 0;
  *whole = false;
  for (size_t e = 0; e < kept_.size(); ++e) {
    const auto& t = kept_[e].tokens;
    const size_t most = std::min(t.size(), prompt.size() - 1);
    size_t common = 0;
    while (common < most && t[common] == prompt[common]) ++common;
    const bool all = common == t.size();
    if (!all && static_cast<int>(common) < cache_->block_size) continue;
    if (static_cast<int>(common) > *positions || (all && !*whole && static_cast<int>(common) == *positions)) {
      best = static_cast<int>(e);
      *positions = static_cast<int>(common);
      *whole = all;
    }
  }
  return best;
}

Expected<std::vector<Completion>> Sampler::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplerConfig& cfg, Rng& rng) {
  return run(prompts, cfg, [&rng](int) -> Rng& { return rng; }, false);
}

Expected<std::vector<Completion>> Sampler::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplerConfig& cfg,
    std::vector<Rng>& rngs) {
  if (rngs.size() != prompts.size())
    return invalid_input(fmt::format("{} generators for {} prompts", rngs.size(), prompts.size()));
  return run(prompts, cfg, [&rngs](int b) -> Rng& { return rngs[static_cast<size_t>(b)]; }, true);
}

template <class RngOf>
Expected<std::vector<Completion>> Sampler::run(const std::vector<std::vector<int32_t>>& prompts,
                                               const SamplerConfig& cfg, RngOf rng_of,
                                               bool own_generators) {
  const ModelConfig& mc = model_->config();
  const int B = static_cast<int>(prompts.size()), V = mc.vocab_size;
  if (B == 0) return std::vector<Completion>{};
  size_t longest = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) return invalid_input(fmt::format("prompt {} is empty", b));
    for (int32_t t : prompts[b])
      if (t < 0 || t >= V)
        return invalid_input(fmt::format("prompt {} has token id {} outside [0, {})", b, t, V));
    longest = std::max(longest, prompts[b].size());
  }
  if (longest >= static_cast<size_t>(mc.max_position_embeddings))
    return invalid_input(
        fmt::format("a prompt of {} tokens leaves no room in max_position_embeddings {}", longest,
                    mc.max_position_embeddings));
  const int maxT = static_cast<int>(std::min<size_t>(
      longest + static_cast<size_t>(cfg.max_new_tokens), mc.max_position_embeddings));
  const int S = max_batch_ > 0 ? std::min(B, max_batch_) : B;  // cache slots: sequences at once
  if (!cfg.reuse_kv) forget_kept();
  const int keep = cfg.reuse_kv ? cfg.kv_keep_sequences : 0;
  if (!cache_) {
    // Sized for the larger of this call and the context set up front, so that a run's later
    // turns do not grow it (set_context).
    cache_ = std::make_unique<KvCache>(mc, model_->backend(), std::max(S, max_batch_),
                                       std::max(maxT, context_), cfg.kv_block_tokens, keep);
    cache_->reclaim = [this] { return drop_oldest_kept(); };
  } else if (cache_->slots < S || cache_->maxT < maxT) {
    forget_kept();  // a grow reallocates the pool: what was kept goes first
    cache_->grow(S, maxT);
  }
  // No slot is live between calls (an earlier call that failed midway may have left blocks).
  for (int s = 0; s < cache_->slots; ++s) cache_->clear(s);
  // Padded embedding rows (vocab_size above the tokenizer's ids) are never sampled.
  const int sample_below = tokenizer_ ? tokenizer_->vocab_size() : V;
  std::vector<int32_t> eos = eos_ids_;
  if (eos.empty()) eos = {tokenizer_ ? tokenizer_->eos_id() : mc.eos_token_id};
  const std::vector<std::string> stops =
      tokenizer_ ? cfg.stop_strings() : std::vector<std::string>{};

  std::vector<Completion> out(static_cast<size_t>(B));
  std::vector<std::string> text(static_cast<size_t>(B));
  // Row r of `logits` holds the next-token logits of sequence row_prompt[r] in slot row_slot[r].
  std::vector<float> logits(static_cast<size_t>(S) * V);
  std::vector<int32_t> row_slot, row_prompt;
  // Identical prompts share one prefill: the first of them is prefilled, the others copy its
  // slot's first prompt-length positions while a slot still holds them, and its logits.
  std::vector<int> distinct_of(static_cast<size_t>(B));
  std::vector<int> first;  // each distinct prompt's first index
  for (int b = 0; b < B; ++b) {
    auto same = [&](int f) { return prompts[f] == prompts[b]; };
    auto it = share_prefill_ ? std::find_if(first.begin(), first.end(), same) : first.end();
    distinct_of[b] = static_cast<int>(it - first.begin());
    if (it == first.end()) first.push_back(b);
  }
  // A distinct prompt's logits, kept until its last repeat has been admitted.
  std::vector<std::vector<float>> distinct_logits(first.size());
  int next_prompt = 0;  // the next index into `order` to admit
  // Admission order: with a generator per sequence, prompts that extend a kept sequence first
  // (they need few new blocks, and admitting them before the others prefill keeps their blocks
  // from being reclaimed), then the rest, each in prompt order; the order does not change what a
  // sequence samples. With one shared generator, prompt order (the draws follow it).
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (int b = 0; b < B; ++b) {
      int reuse = 0;
      bool whole = false;
      const bool extends = own_generators && cfg.reuse_kv &&
                           best_kept(prompts[static_cast<size_t>(b)], &reuse, &whole) >= 0 && whole;
      if (extends == (pass == 0)) order.push_back(b);
    }
  // A reclaim drops kept sequences no prompt still waiting for a slot extends first.
  wanted_ = [&](const std::vector<int32_t>& kept_tokens) {
    for (size_t i = static_cast<size_t>(next_prompt); i < order.size(); ++i) {
      const auto& p = prompts[static_cast<size_t>(order[i])];
      if (kept_tokens.size() < p.size() && std::equal(kept_tokens.begin(), kept_tokens.end(), p.begin()))
        return true;
    }
    return false;
  };
  struct ForgetWanted {
    std::function<bool(const std::vector<int32_t>&)>* f;
    ~ForgetWanted() { *f = nullptr; }
  } forget_wanted{&wanted_};
  std::vector<int> last_of(first.size());
  for (int b : order) last_of[static_cast<size_t>(distinct_of[b])] = b;
  std::vector<int> slot_prompt(static_cast<size_t>(S), -1);  // the prompt a slot holds, -1: free
  std::vector<int32_t> free_slots(static_cast<size_t>(S));
  std::iota(free_slots.rbegin(), free_slots.rend(), 0);  // popped from the back: 0 first

  // Continuous batching: the next prompts take the free slots, their logits the rows after
  // `rows_kept`.
  auto admit = [&]() -> Status {
    std::vector<int> slot_of_new, prompt_of_new;
    while (!free_slots.empty() && next_prompt < B) {
      slot_of_new.push_back(free_slots.back());
      free_slots.pop_back();
      prompt_of_new.push_back(order[static_cast<size_t>(next_prompt++)]);
    }
    const size_t n = slot_of_new.size();
    if (n == 0) return Status::ok();
    // Which new sequences need a prefill: the first of their prompt not held by a live slot.
    // The others either extend a kept sequence that holds the start of their prompt (a later
    // turn) or are prefilled.
    std::vector<int> source(n, -1);  // slot to copy the prompt's positions from
    std::vector<std::vector<int32_t>> to_prefill, to_extend;
    std::vector<int32_t> prefill_slots, extend_slots;
    std::vector<int> prefill_distinct, extend_distinct;
    for (size_t i = 0; i < n; ++i) {
      const int u = distinct_of[prompt_of_new[i]];
      for (int sl = 0; sl < S && source[i] < 0; ++sl)
        if (slot_prompt[sl] >= 0 && distinct_of[slot_prompt[sl]] == u) source[i] = sl;
      const auto& prompt = prompts[static_cast<size_t>(prompt_of_new[i])];
      int reuse = 0;
      bool whole = false;
      const int e = source[i] < 0 && cfg.reuse_kv ? best_kept(prompt, &reuse, &whole) : -1;
      if (e >= 0) {
        if (whole) {  // its next turn: the blocks move to the slot
          cache_->attach(slot_of_new[i], std::move(kept_[static_cast<size_t>(e)].blocks), reuse);
          kept_.erase(kept_.begin() + e);
        } else {  // a shared start: the kept sequence stays for its own next turn
          cache_->share(slot_of_new[i], kept_[static_cast<size_t>(e)].blocks, reuse);
        }
        to_extend.emplace_back(prompt.begin() + reuse, prompt.end());
        extend_slots.push_back(slot_of_new[i]);
        extend_distinct.push_back(u);
        counts_.reused_tokens += reuse;
        out[static_cast<size_t>(prompt_of_new[i])].reused_tokens = reuse;
        counts_.prefilled_tokens += static_cast<int64_t>(prompt.size()) - reuse;
      } else if (source[i] < 0) {
        to_prefill.push_back(prompt);
        prefill_slots.push_back(slot_of_new[i]);
        prefill_distinct.push_back(u);
        counts_.prefilled_tokens += static_cast<int64_t>(prompt.size());
      }
      slot_prompt[slot_of_new[i]] = prompt_of_new[i];
      if (source[i] < 0) source[i] = slot_of_new[i];  // it is its own source (prefilled)
    }
    // Row j of `fresh` becomes the logits of distinct prompt distinct[j].
    auto store = [&](const std::vector<float>& fresh, const std::vector<int>& distinct) {
      for (size_t j = 0; j < distinct.size(); ++j)
        distinct_logits[static_cast<size_t>(distinct[j])].assign(
            fresh.begin() + static_cast<std::ptrdiff_t>(j * V), fresh.begin() + static_cast<std::ptrdiff_t>((j + 1) * V));
    };
    if (!to_prefill.empty()) {
      std::vector<float> fresh(to_prefill.size() * static_cast<size_t>(V));
      LEAP_RETURN_IF_ERROR(model_->prefill(TokenBatch::from_sequences(to_prefill), *cache_, fresh.data(),
                                           prefill_slots.data()));
      store(fresh, prefill_distinct);
    }
    if (!to_extend.empty()) {
      std::vector<float> fresh(to_extend.size() * static_cast<size_t>(V));
      model_->extend(to_extend, extend_slots.data(), *cache_, fresh.data());
      store(fresh, extend_distinct);
    }
    for (size_t i = 0; i < n; ++i) {
      const int b = prompt_of_new[i], u = distinct_of[b];
      if (source[i] != slot_of_new[i]) {
        cache_->copy_slot(source[i], slot_of_new[i], static_cast<int>(prompts[static_cast<size_t>(b)].size()));
        out[static_cast<size_t>(b)].reused_tokens = static_cast<int>(prompts[static_cast<size_t>(b)].size());
      }
      std::copy_n(distinct_logits[static_cast<size_t>(u)].data(), V, logits.data() + row_slot.size() * V);
      if (last_of[static_cast<size_t>(u)] == b) std::vector<float>().swap(distinct_logits[static_cast<size_t>(u)]);
      row_slot.push_back(slot_of_new[i]);
      row_prompt.push_back(b);
    }
    return Status::ok();
  };
  LEAP_RETURN_IF_ERROR(admit());

  while (!row_slot.empty()) {
    std::vector<int32_t> next_tokens, next_slots, next_prompts;
    for (size_t r = 0; r < row_slot.size(); ++r) {
      const int b = row_prompt[r], slot = row_slot[r];
      Completion& c = out[static_cast<size_t>(b)];
      float lp = 0.0f;
      const int32_t tok = sample_token(logits.data() + r * V, V, cfg, rng_of(b), &lp, sample_below);
      c.tokens.push_back(tok);
      c.logprobs.push_back(lp);
      bool done = false;
      if (cfg.stop_at_eos && std::find(eos.begin(), eos.end(), tok) != eos.end()) {
        c.stop_reason = StopReason::kEos;
        done = true;
      }
      if (!done && !stops.empty()) {
        const std::string piece = tokenizer_->token_bytes(tok);
        std::string& t = text[static_cast<size_t>(b)];
        t += piece;
        for (const auto& st : stops) {
          // Only a match that ends in the new piece is new.
          size_t from =
              t.size() >= st.size() + piece.size() ? t.size() - st.size() - piece.size() + 1 : 0;
          if (t.find(st, from) != std::string::npos) {
            c.stop_reason = StopReason::kStopString;
            done = true;
            break;
          }
        }
      }
      if (!done && static_cast<int>(c.tokens.size()) >= cfg.max_new_tokens) {
        c.stop_reason = StopReason::kMaxTokens;
        done = true;
      }
      if (!done && cache_->len[slot] + 1 >= maxT) {
        // prompt + completion fill the context: the trainer could not score one more token.
        c.stop_reason = StopReason::kContextFull;
        done = true;
      }
      if (done) {
        if (cfg.reuse_kv) {
          // The cache holds the prompt and every sampled token but this last one.
          Kept k{prompts[static_cast<size_t>(b)], cache_->detach(slot)};
          k.tokens.insert(k.tokens.end(), c.tokens.begin(), c.tokens.end() - 1);
          LEAP_CHECK(k.blocks.len == static_cast<int>(k.tokens.size()),
                     "slot " << slot << " holds " << k.blocks.len << " positions of " << k.tokens.size());
          kept_.push_back(std::move(k));
        } else {
          cache_->clear(slot);
        }
        slot_prompt[slot] = -1;
        free_slots.push_back(slot);
      } else {
        next_tokens.push_back(tok);
        next_slots.push_back(slot);
        next_prompts.push_back(b);
      }
    }
    row_slot = next_slots;
    row_prompt = next_prompts;
    if (!row_slot.empty())
      model_->decode(next_tokens.data(), next_slots.data(), static_cast<int>(row_slot.size()), *cache_,
                     logits.data());
    LEAP_RETURN_IF_ERROR(admit());  // a finished sequence's slot takes the next prompt
  }
  return out;
}

}  // namespace leap::model
