// Sampler::Session: continuous batching over the paged KV cache. Prompts join at any time; each
// step admits waiting prompts into free slots, samples one token per live sequence and decodes.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/check.h"
#include "model/sampler.h"

namespace leap::model {

Sampler::Session::Session(Sampler& sampler, const SamplerConfig& cfg, int slots, Rng* shared_rng)
    : s_(sampler),
      cfg_(cfg),
      shared_rng_(shared_rng),
      S_(slots),
      V_(sampler.model_->config().vocab_size),
      // Padded embedding rows (vocab_size above the tokenizer's ids) are never sampled.
      sample_below_(sampler.tokenizer_ ? sampler.tokenizer_->vocab_size() : V_),
      max_positions_(sampler.model_->config().max_position_embeddings),
      eos_(sampler.eos_ids_),
      stops_(sampler.tokenizer_ ? cfg.stop_strings() : std::vector<std::string>{}),
      slot_seq_(static_cast<size_t>(slots), -1),
      free_slots_(static_cast<size_t>(slots)),
      logits_arena_(sampler.model_->backend()) {
  logits_arena_.take(&logits_, static_cast<size_t>(slots) * static_cast<size_t>(V_));
  logits_arena_.allocate();
  if (eos_.empty()) eos_ = {s_.tokenizer_ ? s_.tokenizer_->eos_id() : s_.model_->config().eos_token_id};
  std::iota(free_slots_.rbegin(), free_slots_.rend(), 0);
  // A reclaim drops kept sequences no waiting prompt extends first.
  s_.wanted_ = [this](const std::vector<int32_t>& kept_tokens) {
    for (int i : waiting_) {
      const auto& p = seqs_.at(i).prompt;
      if (kept_tokens.size() < p.size() && std::equal(kept_tokens.begin(), kept_tokens.end(), p.begin()))
        return true;
    }
    return false;
  };
}

Sampler::Session::~Session() { s_.wanted_ = nullptr; }

Status Sampler::Session::add(std::vector<int32_t> prompt, int64_t tag, Rng rng) {
  const int index = next_seq_;
  LEAP_RETURN_IF_ERROR(s_.check_prompt(prompt, index));
  const int need = std::min(static_cast<int>(prompt.size()) + cfg_.max_new_tokens, max_positions_);
  if (s_.cache_->maxT < need) {
    // Only an unused pool grows: a session of the streaming pipeline is sized up front (the run's
    // context), so this happens only to a caller that sized it too small while decoding.
    if (live() > 0)
      return invalid_input(fmt::format("prompt {} needs {} positions, but the KV cache holds {} and is in use: size "
                                       "it for the run's context first (Sampler::set_context)",
                                       index, need, s_.cache_->maxT));
    s_.reserve(S_, need, cfg_);
  }
  ++next_seq_;
  int distinct = -1;
  if (s_.share_prefill_)
    for (auto& [id, d] : distinct_)
      if (d.prompt == prompt) distinct = id;
  if (distinct < 0) {
    distinct = next_distinct_++;
    distinct_[distinct].prompt = prompt;
  }
  ++distinct_[distinct].waiting;
  seqs_.emplace(index, Seq{std::move(prompt), tag, rng, distinct, {}, {}});
  waiting_.push_back(index);
  return Status::ok();
}

std::vector<int> Sampler::Session::admission(size_t n) const {
  std::vector<int> order = waiting_;
  if (!shared_rng_ && cfg_.reuse_kv)
    std::stable_partition(order.begin(), order.end(), [&](int i) {
      int reuse = 0;
      bool whole = false;
      return s_.best_kept(seqs_.at(i).prompt, &reuse, &whole) >= 0 && whole;  // extends a kept one
    });
  if (order.size() > n) order.resize(n);
  return order;
}

Status Sampler::Session::admit() {
  if (free_slots_.empty() || waiting_.empty()) return Status::ok();
  const std::vector<int> picked = admission(std::min(free_slots_.size(), waiting_.size()));
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [&](int i) { return std::find(picked.begin(), picked.end(), i) != picked.end(); }),
                 waiting_.end());
  const size_t n = picked.size();
  std::vector<int32_t> slot_of_new(n);
  for (size_t i = 0; i < n; ++i) {
    slot_of_new[i] = free_slots_.back();
    free_slots_.pop_back();
  }
  KvCache& cache = *s_.cache_;
  // Which new sequences need a prefill: the first of their prompt not held by a live slot. The
  // others either extend a kept sequence that holds the start of their prompt (a later turn) or
  // are prefilled.
  std::vector<int> source(n, -1);  // slot to copy the prompt's positions from
  std::vector<std::vector<int32_t>> to_prefill, to_extend;
  std::vector<int32_t> prefill_slots, extend_slots;
  std::vector<int> prefill_distinct, extend_distinct;
  for (size_t i = 0; i < n; ++i) {
    Seq& q = seqs_.at(picked[i]);
    for (int sl = 0; sl < S_ && source[i] < 0; ++sl)
      if (slot_seq_[static_cast<size_t>(sl)] >= 0 && seqs_.at(slot_seq_[static_cast<size_t>(sl)]).distinct == q.distinct)
        source[i] = sl;
    int reuse = 0;
    bool whole = false;
    // A prompt of this session whose identical siblings have all finished: its logits are the
    // first one's, and a kept sibling holds all its positions. Sharing them and keeping those
    // logits samples what a sibling admitted beside a live one samples (a copy of its slot);
    // extending the last prompt token instead would round differently (by bf16 rounding with a
    // bf16 cache, whose extend reads rounded keys where the prefill read its own fp32 ones).
    const Distinct& dq = distinct_.at(q.distinct);
    const int sibling = source[i] < 0 && cfg_.reuse_kv && !dq.logits.empty() ? s_.kept_holding(q.prompt) : -1;
    if (sibling >= 0) {
      cache.share(slot_of_new[i], s_.kept_[static_cast<size_t>(sibling)].blocks, static_cast<int>(q.prompt.size()));
      s_.counts_.reused_tokens += static_cast<int64_t>(q.prompt.size());
      q.c.reused_tokens = static_cast<int>(q.prompt.size());
      slot_seq_[static_cast<size_t>(slot_of_new[i])] = picked[i];
      source[i] = slot_of_new[i];  // nothing to copy: its positions are in place, its logits kept
      continue;
    }
    const int e = source[i] < 0 && cfg_.reuse_kv ? s_.best_kept(q.prompt, &reuse, &whole) : -1;
    if (e >= 0) {
      auto& kept = s_.kept_[static_cast<size_t>(e)];
      if (whole) {  // its next turn: the blocks move to the slot
        cache.attach(slot_of_new[i], std::move(kept.blocks), reuse);
        s_.kept_.erase(s_.kept_.begin() + e);
      } else {  // a shared start: the kept sequence stays for its own next turn
        cache.share(slot_of_new[i], kept.blocks, reuse);
      }
      to_extend.emplace_back(q.prompt.begin() + reuse, q.prompt.end());
      extend_slots.push_back(slot_of_new[i]);
      extend_distinct.push_back(q.distinct);
      s_.counts_.reused_tokens += reuse;
      q.c.reused_tokens = reuse;
      s_.counts_.prefilled_tokens += static_cast<int64_t>(q.prompt.size()) - reuse;
    } else if (source[i] < 0) {
      to_prefill.push_back(q.prompt);
      prefill_slots.push_back(slot_of_new[i]);
      prefill_distinct.push_back(q.distinct);
      s_.counts_.prefilled_tokens += static_cast<int64_t>(q.prompt.size());
    }
    slot_seq_[static_cast<size_t>(slot_of_new[i])] = picked[i];
    if (source[i] < 0) source[i] = slot_of_new[i];  // it is its own source (prefilled)
  }
  const size_t V = static_cast<size_t>(V_);
  // Row j of `fresh` becomes the logits of distinct prompt distinct[j].
  auto store = [&](const std::vector<float>& fresh, const std::vector<int>& distinct) {
    for (size_t j = 0; j < distinct.size(); ++j)
      distinct_.at(distinct[j]).logits.assign(fresh.begin() + static_cast<std::ptrdiff_t>(j * V),
                                              fresh.begin() + static_cast<std::ptrdiff_t>((j + 1) * V));
  };
  if (!to_prefill.empty()) {
    // In forwards of at most prefill_batch_ prompts (Sampler::set_prefill_batch). When that takes
    // more than one forward, the prompts go longest first, so that each forward pads its prompts
    // to lengths close to their own (one forward keeps the admission order, as before).
    const size_t n_prefill = to_prefill.size();
    const size_t chunk = s_.prefill_batch_ > 0 ? static_cast<size_t>(s_.prefill_batch_) : n_prefill;
    std::vector<size_t> order(n_prefill);
    std::iota(order.begin(), order.end(), size_t{0});
    if (chunk < n_prefill)
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return to_prefill[x].size() > to_prefill[y].size(); });
    std::vector<float> fresh(n_prefill * V), part_logits;
    for (size_t a = 0; a < n_prefill; a += chunk) {
      const size_t b = std::min(n_prefill, a + chunk);
      std::vector<std::vector<int32_t>> part;
      std::vector<int32_t> part_slots;
      for (size_t k = a; k < b; ++k) {
        part.push_back(to_prefill[order[k]]);
        part_slots.push_back(prefill_slots[order[k]]);
      }
      part_logits.resize(part.size() * V);
      LEAP_RETURN_IF_ERROR(
          s_.model_->prefill(TokenBatch::from_sequences(part), cache, part_logits.data(), part_slots.data()));
      for (size_t k = a; k < b; ++k)
        std::copy_n(part_logits.begin() + static_cast<std::ptrdiff_t>((k - a) * V), V,
                    fresh.begin() + static_cast<std::ptrdiff_t>(order[k] * V));
    }
    store(fresh, prefill_distinct);
  }
  if (!to_extend.empty()) {
    std::vector<float> fresh(to_extend.size() * V);
    s_.model_->extend(to_extend, extend_slots.data(), cache, fresh.data());
    store(fresh, extend_distinct);
  }
  for (size_t i = 0; i < n; ++i) {
    Seq& q = seqs_.at(picked[i]);
    if (source[i] != slot_of_new[i]) {
      cache.copy_slot(source[i], slot_of_new[i], static_cast<int>(q.prompt.size()));
      q.c.reused_tokens = static_cast<int>(q.prompt.size());
    }
    Distinct& d = distinct_.at(q.distinct);
    s_.model_->backend().upload(logits_ + row_slot_.size() * V, d.logits.data(), V);
    --d.waiting;
    ++d.live;
    row_slot_.push_back(slot_of_new[i]);
    row_seq_.push_back(picked[i]);
  }
  return Status::ok();
}

Status Sampler::Session::step() {
  LEAP_RETURN_IF_ERROR(admit());
  if (row_slot_.empty()) return Status::ok();
  KvCache& cache = *s_.cache_;
  // Every row's draw, in row order, then every row's token where the logits are.
  const size_t rows = row_slot_.size();
  std::vector<double> uniforms(rows);
  for (size_t r = 0; r < rows; ++r)
    uniforms[r] = token_draw(cfg_, shared_rng_ ? *shared_rng_ : seqs_.at(row_seq_[r]).rng);
  std::vector<int32_t> sampled(rows);
  std::vector<float> sampled_lp(rows);
  s_.model_->backend().sample_rows(sampled.data(), sampled_lp.data(), logits_, uniforms.data(),
                                   static_cast<int>(rows), V_, token_rule(cfg_), sample_below_);
  std::vector<int32_t> next_tokens, next_slots;
  std::vector<int> next_seqs;
  for (size_t r = 0; r < rows; ++r) {
    const int i = row_seq_[r], slot = row_slot_[r];
    Seq& q = seqs_.at(i);
    Completion& c = q.c;
    const int32_t tok = sampled[r];
    c.tokens.push_back(tok);
    c.logprobs.push_back(sampled_lp[r]);
    bool done = false;
    if (cfg_.stop_at_eos && std::find(eos_.begin(), eos_.end(), tok) != eos_.end()) {
      c.stop_reason = StopReason::kEos;
      done = true;
    }
    if (!done && !stops_.empty()) {
      const std::string piece = s_.tokenizer_->token_bytes(tok);
      std::string& t = q.text;
      t += piece;
      for (const auto& st : stops_) {
        // Only a match that ends in the new piece is new.
        size_t from = t.size() >= st.size() + piece.size() ? t.size() - st.size() - piece.size() + 1 : 0;
        if (t.find(st, from) != std::string::npos) {
          c.stop_reason = StopReason::kStopString;
          done = true;
          break;
        }
      }
    }
    if (!done && static_cast<int>(c.tokens.size()) >= cfg_.max_new_tokens) {
      c.stop_reason = StopReason::kMaxTokens;
      done = true;
    }
    if (!done && cache.len[slot] + 1 >= max_positions_) {
      // prompt + completion fill the context: the trainer could not score one more token.
      c.stop_reason = StopReason::kContextFull;
      done = true;
    }
    if (!done) {
      next_tokens.push_back(tok);
      next_slots.push_back(slot);
      next_seqs.push_back(i);
      continue;
    }
    if (cfg_.reuse_kv) {
      // The cache holds the prompt and every sampled token but this last one.
      Kept k{std::move(q.prompt), cache.detach(slot)};
      k.tokens.insert(k.tokens.end(), c.tokens.begin(), c.tokens.end() - 1);
      LEAP_CHECK(k.blocks.len == static_cast<int>(k.tokens.size()),
                 "slot " << slot << " holds " << k.blocks.len << " positions of " << k.tokens.size());
      s_.kept_.push_back(std::move(k));
    } else {
      cache.clear(slot);
    }
    slot_seq_[static_cast<size_t>(slot)] = -1;
    free_slots_.push_back(slot);
    // The last of its identical prompts: a later one is a new entry (prefilled again, or sharing
    // a kept sequence's blocks).
    Distinct& d = distinct_.at(q.distinct);
    if (--d.live == 0 && d.waiting == 0) distinct_.erase(q.distinct);
    finished_.emplace_back(q.tag, std::move(c));
    seqs_.erase(i);
  }
  row_slot_ = next_slots;
  row_seq_ = next_seqs;
  if (!row_slot_.empty())
    s_.model_->decode_into(next_tokens.data(), next_slots.data(), static_cast<int>(row_slot_.size()), cache,
                           logits_);
  return Status::ok();
}

std::vector<std::pair<int64_t, Completion>> Sampler::Session::take_finished() {
  std::vector<std::pair<int64_t, Completion>> out;
  out.swap(finished_);
  return out;
}

}  // namespace leap::model
