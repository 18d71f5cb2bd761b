// Sampler: the host entry to the token rule (backend/token_select.h) and the batched decode loop.
#include "model/sampler.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/token_select.h"
#include "common/check.h"

namespace leap::model {

void SamplerConfig::declare(OptionSet& opts) {
  opts.add("sampler.temperature", &temperature, 1.0,
           "Sampling temperature; 0 = greedy. RL also takes the recorded and the training "
           "log-probabilities at this temperature (log softmax(logits / T)).",
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
  opts.add("sampler.batch_seqs", &batch_seqs, 0,
           "Sequences a policy rank decodes together (the KV cache's slots); 0 = "
           "train.micro_batch_seqs. Prompts are prefilled at most train.micro_batch_seqs at a time, "
           "so a larger decoding batch costs only KV cache (leap plan counts it).",
           {.min = 0, .max = 4096});
  opts.add("sampler.kv_block_tokens", &kv_block_tokens, 16,
           "Positions per block of the paged KV cache.", {.min = 1});
  opts.add("sampler.kv_keep_sequences", &kv_keep_sequences, 8,
           "Full-length sequences' worth of KV blocks beyond the decoding slots, for finished "
           "sequences kept for their next turn (sampler.reuse_kv); 0: keep them only in what the "
           "live sequences leave free.", {.min = 0, .max = 4096});
  opts.add("sampler.kv_cache_dtype", &kv_cache_dtype, std::string("auto"),
           "Storage of the KV cache: bf16 halves it (keys and values rounded once, attention in "
           "fp32); auto = bf16 on backend.name = cuda, fp32 on cpu.",
           {.choices = {"auto", "fp32", "bf16"}});
  opts.add("sampler.reuse_kv", &reuse_kv, true,
           "Keep a finished sequence's KV cache for a later turn of the same step whose prompt "
           "extends it (token-append prompts), so that turn runs only its new tokens.");
}

Status SamplerConfig::validate() const {
  if (temperature > 0.0 && temperature < kMinTemperature)
    return invalid_input(fmt::format(
        "option 'sampler.temperature' = {} is below {}: use 0 for greedy decoding, or at least {}",
        temperature, kMinTemperature, kMinTemperature));
  return Status::ok();
}

backend::KvDtype kv_cache_dtype(const SamplerConfig& c, bool device_backend) {
  LEAP_CHECK(c.kv_cache_dtype == "auto" || c.kv_cache_dtype == "fp32" || c.kv_cache_dtype == "bf16",
             "sampler.kv_cache_dtype = " << c.kv_cache_dtype << ": use auto, fp32 or bf16");
  if (c.kv_cache_dtype == "bf16" || (c.kv_cache_dtype == "auto" && device_backend))
    return backend::KvDtype::kBf16;
  return backend::KvDtype::kF32;
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
  return backend::select_token(logits, V, token_rule(cfg), token_draw(cfg, rng), logprob,
                               sample_below);
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

int Sampler::kept_holding(const std::vector<int32_t>& prompt) const {
  for (size_t e = 0; e < kept_.size(); ++e) {
    const auto& t = kept_[e].tokens;
    if (t.size() >= prompt.size() && std::equal(prompt.begin(), prompt.end(), t.begin())) return static_cast<int>(e);
  }
  return -1;
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
  return run(prompts, cfg, &rng, nullptr);
}

Expected<std::vector<Completion>> Sampler::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplerConfig& cfg,
    const std::vector<Rng>& rngs) {
  if (rngs.size() != prompts.size())
    return invalid_input(fmt::format("{} generators for {} prompts", rngs.size(), prompts.size()));
  return run(prompts, cfg, nullptr, &rngs);
}

void Sampler::reserve(int slots, int positions, const SamplerConfig& cfg) {
  const ModelConfig& mc = model_->config();
  positions = std::min(std::max(positions, 1), mc.max_position_embeddings);
  const backend::KvDtype dtype = kv_cache_dtype(cfg, !model_->backend().host_memory());
  if (cache_ && cache_->dtype != dtype) {
    forget_kept();  // kept sequences live in the old pool, which goes before the new one comes
    cache_.reset();
  }
  if (!cache_) {
    // Sized for the larger of this session and the context set up front, so that a run's later
    // turns do not grow it (set_context).
    cache_ = std::make_unique<KvCache>(mc, model_->backend(), std::max(slots, max_batch_),
                                       std::max(positions, context_), cfg.kv_block_tokens,
                                       cfg.reuse_kv ? cfg.kv_keep_sequences : 0, dtype);
    cache_->reclaim = [this] { return drop_oldest_kept(); };
  } else if (cache_->slots < slots || cache_->maxT < positions) {
    forget_kept();  // a grow reallocates the pool: what was kept goes first
    cache_->grow(std::max(slots, cache_->slots), std::max(positions, cache_->maxT));
  }
}

std::unique_ptr<Sampler::Session> Sampler::open(const SamplerConfig& cfg, int slots, Rng* shared_rng,
                                                int longest_prompt) {
  slots = std::max(1, slots);
  if (!cfg.reuse_kv) forget_kept();
  // No slot is live between sessions (one that failed or was dropped midway may have left
  // blocks), and a grow refuses a pool whose blocks are in use: clear them before reserving.
  if (cache_)
    for (int s = 0; s < cache_->slots; ++s) cache_->clear(s);
  reserve(slots, longest_prompt > 0 ? longest_prompt + cfg.max_new_tokens : 0, cfg);
  return std::unique_ptr<Session>(new Session(*this, cfg, slots, shared_rng));
}

Status Sampler::check_prompt(const std::vector<int32_t>& prompt, int index) const {
  const ModelConfig& mc = model_->config();
  if (prompt.empty()) return invalid_input(fmt::format("prompt {} is empty", index));
  for (int32_t t : prompt)
    if (t < 0 || t >= mc.vocab_size)
      return invalid_input(fmt::format("prompt {} has token id {} outside [0, {})", index, t, mc.vocab_size));
  if (prompt.size() >= static_cast<size_t>(mc.max_position_embeddings))
    return invalid_input(fmt::format("a prompt of {} tokens leaves no room in max_position_embeddings {}",
                                     prompt.size(), mc.max_position_embeddings));
  return Status::ok();
}

Expected<std::vector<Completion>> Sampler::run(const std::vector<std::vector<int32_t>>& prompts,
                                               const SamplerConfig& cfg, Rng* shared_rng, const std::vector<Rng>* rngs) {
  const int B = static_cast<int>(prompts.size());
  if (B == 0) return std::vector<Completion>{};
  size_t longest = 0;
  // Every prompt is checked before the pool is sized (a grow drops what was kept).
  for (int b = 0; b < B; ++b) {
    LEAP_RETURN_IF_ERROR(check_prompt(prompts[static_cast<size_t>(b)], b));
    longest = std::max(longest, prompts[static_cast<size_t>(b)].size());
  }
  auto session = open(cfg, max_batch_ > 0 ? std::min(B, max_batch_) : B, shared_rng, static_cast<int>(longest));
  for (int b = 0; b < B; ++b)
    LEAP_RETURN_IF_ERROR(session->add(prompts[static_cast<size_t>(b)], b,
                                      rngs ? (*rngs)[static_cast<size_t>(b)] : Rng()));
  std::vector<Completion> out(static_cast<size_t>(B));
  while (!session->idle()) {
    LEAP_RETURN_IF_ERROR(session->step());
    for (auto& [b, c] : session->take_finished()) out[static_cast<size_t>(b)] = std::move(c);
  }
  return out;
}

}  // namespace leap::model
