// Generation and the GRPO update of one policy replica.
#include "mpi/policy_replica.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "common/check.h"
#include "common/rng.h"
#include "common/stopwatch.h"
#include "model/token_batch.h"
#include "mpi/grad_reduce.h"
#include "mpi/checkpoint_write.h"
#include "mpi/optimizer_step.h"
#include "mpi/work_balance.h"

namespace leap::mpi {

PolicyReplica::PolicyReplica(model::Transformer& model, const model::Tokenizer& tokenizer, model::AdamW* optimizer,
                             PolicyReplicaOptions opts)
    : model_(model), tokenizer_(tokenizer), optimizer_(optimizer), opts_(std::move(opts)), sampler_(model, &tokenizer) {
  sampler_.set_eos_ids(opts_.eos_ids);
  sampler_.set_max_batch(generation_batch());
  // A prefill runs the training forward: no more prompts at once than a training micro-batch,
  // whose activations the arena (and leap plan) is sized for.
  sampler_.set_prefill_batch(std::max(1, opts_.micro_batch_seqs));
  sampler_.set_context(opts_.context_tokens);
  // The training forward's log-probs (and the KL reference's) at the temperature the sampler
  // draws and records at, so that the update is the tempered policy's on-policy gradient.
  model_.set_logprob_temperature(model::logprob_temperature(opts_.sampler));
}


std::vector<Completion> PolicyReplica::generate(const std::vector<RolloutItem>& items) {
  // Up to generation_batch() sequences decode together; as one finishes, the next item takes its
  // KV-cache slot (continuous batching). Each item draws from its own seed, so its completion
  // does not depend on the batch or rank it landed in (the constructor set the batch size).
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Rng> rngs;
  for (const auto& it : items) {
    prompts.push_back(it.prompt_ids);
    rngs.emplace_back(it.seed);
  }
  auto gen = sampler_.generate(prompts, opts_.sampler, rngs);
  LEAP_CHECK(gen.has_value(), "sampling failed: " << gen.status().message());
  std::vector<Completion> out;
  for (size_t k = 0; k < prompts.size(); ++k) out.push_back(completion_of(items[k].uid, std::move(prompts[k]), std::move((*gen)[k])));
  return out;
}

Completion PolicyReplica::completion_of(int64_t uid, std::vector<int32_t> prompt, model::Completion c) const {
  return {uid, tokenizer_.decode(c.tokens), std::move(prompt), std::move(c.tokens), std::move(c.logprobs),
          c.reused_tokens};
}

void PolicyReplica::generate_stream(WorkSource& source) {
  // One sampler session for the whole phase: items join it as they come, so a finished
  // sequence's slot takes the next item whichever hand-out brought it. Each item draws from its
  // own seed, as in generate().
  auto session = sampler_.open(opts_.sampler, generation_batch());
  std::map<int64_t, std::vector<int32_t>> prompt_of;  // by uid, until its completion is done
  double busy_s = 0;
  for (;;) {
    const int room = session->slots() - session->live() - session->waiting();
    auto items = source.more(std::max(0, room), session->idle());
    if (!items) return;
    for (auto& it : *items) {
      Status st = session->add(it.prompt_ids, it.uid, Rng(it.seed));
      LEAP_CHECK(st.is_ok(), "sampling failed: " << st.message());
      prompt_of[it.uid] = std::move(it.prompt_ids);
    }
    if (session->idle()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    Status st = session->step();
    LEAP_CHECK(st.is_ok(), "sampling failed: " << st.message());
    std::vector<Completion> finished;
    for (auto& [uid, c] : session->take_finished()) {
      auto p = prompt_of.extract(uid);
      finished.push_back(completion_of(uid, std::move(p.mapped()), std::move(c)));
    }
    busy_s += seconds_since(t0);
    if (!finished.empty()) {
      source.done(std::move(finished), busy_s);
      busy_s = 0;
    }
  }
}

// The flat loss inputs of a micro-batch, aligned with the model's log-prob convention: the
// completion token j of sample b sits at position prompt_len + j of row b.
struct MicroBatch {
  model::TokenBatch batch;
  std::vector<float> old_logp, mask, advantages, token_advantages;
  std::vector<int64_t> offsets;

  MicroBatch(const std::vector<const TrainSample*>& samples, int32_t pad_id) {
    std::vector<std::vector<int32_t>> seqs;
    bool spans = false;
    for (const auto* s : samples) {
      seqs.push_back(s->tokens);
      spans = spans || !s->span_start.empty();
    }
    batch = model::TokenBatch::from_sequences(seqs, pad_id);
    const size_t T = static_cast<size_t>(batch.T), n = static_cast<size_t>(batch.B) * T;
    old_logp.assign(n, 0.f);
    mask.assign(n, 0.f);
    if (spans) token_advantages.assign(n, 0.f);
    offsets.push_back(0);
    for (size_t b = 0; b < samples.size(); ++b) {
      const TrainSample& s = *samples[b];
      // Each loss span: (first position, length, advantage); one span for a per-turn sample.
      std::vector<std::tuple<size_t, size_t, float>> loss_spans;
      if (s.span_start.empty()) {
        loss_spans.emplace_back(static_cast<size_t>(s.prompt_len), s.old_logprobs.size(), s.advantage);
      } else {
        for (size_t k = 0; k < s.span_start.size(); ++k)
          loss_spans.emplace_back(static_cast<size_t>(s.span_start[k]),
                                  static_cast<size_t>(s.span_len[k]), s.span_advantage[k]);
      }
      size_t j = 0;  // index into old_logprobs, over the spans in order
      for (const auto& [start, len, adv] : loss_spans) {
        for (size_t k = 0; k < len && j < s.old_logprobs.size(); ++k, ++j) {
          const size_t t = start + k;
          if (t == 0 || t >= s.tokens.size()) continue;
          old_logp[b * T + t] = s.old_logprobs[j];
          mask[b * T + t] = 1.f;
          if (spans) token_advantages[b * T + t] = adv;
        }
      }
      advantages.push_back(s.advantage);
      offsets.push_back(static_cast<int64_t>((b + 1) * T));
    }
  }

  rl::LossInputs inputs(std::span<const float> logp, std::span<const float> ref_logp = {}) const {
    rl::LossInputs in;
    in.logp = logp;
    in.ref_logp = ref_logp;
    in.old_logp = old_logp;
    in.mask = mask;
    in.advantages = advantages;
    in.offsets = offsets;
    in.token_advantages = token_advantages;
    return in;
  }
};

namespace {

// A mini-batch's samples, shortest first, cut into micro-batches of `per` sequences.
std::vector<MicroBatch> micro_batches_of(std::vector<const TrainSample*> part, int per, int32_t pad) {
  sort_by_length(part);
  const size_t step = static_cast<size_t>(std::max(1, per));
  std::vector<MicroBatch> micro;
  for (size_t i = 0; i < part.size(); i += step) {
    std::vector<const TrainSample*> chunk(part.begin() + static_cast<long>(i),
                                          part.begin() + static_cast<long>(std::min(part.size(), i + step)));
    micro.emplace_back(chunk, pad);
  }
  return micro;
}

}  // namespace

void PolicyReplica::backprop(MicroBatch& mb, double norm, bool last, TrainReport* report) {
  // The reference's forward comes first: the policy's own forward then leaves the activations
  // its backward needs.
  std::vector<float> ref_logp;
  if (opts_.loss.kl_beta > 0) {
    ref_logp.resize(mb.old_logp.size());
    Status st = reference_->logprobs(model_, mb.batch, ref_logp.data());
    LEAP_CHECK(st.is_ok(), "reference forward failed: " << st.message());
  }
  std::vector<float> logp(mb.old_logp.size());
  Status st = model_.forward(mb.batch, logp.data());
  LEAP_CHECK(st.is_ok(), "training forward failed: " << st.message());
  rl::LossOutput out = rl::grpo_loss(mb.inputs(logp, ref_logp), opts_.loss, norm, norm == 0);
  // The last micro-batch's backward completes the gradient: its reduction may start there.
  if (last) arm_last_backward(model_, opts_.reducer, opts_.zero);
  model_.backward(out.dlogp.data());
  report->loss += out.loss;
  report->tokens += out.stats.tokens;
  report->clipped += out.stats.clipped + out.stats.dual_clipped;
  report->ratio_sum += out.stats.ratio_sum;
  report->ratio_max = std::max(report->ratio_max, out.stats.ratio_max);
  report->kl_sum += out.stats.kl_sum;
  report->neg_logp_sum += out.stats.neg_logp_sum;
}

void PolicyReplica::train_early(const std::vector<TrainSample>& samples) {
  LEAP_CHECK(optimizer_ != nullptr, "training a replica built for sampling only (no optimizer)");
  LEAP_CHECK(opts_.loss.kl_beta == 0 || reference_ != nullptr, "rl.kl_beta > 0 needs a reference policy");
  LEAP_CHECK(opts_.zero == nullptr || model_.gradient_stream() == nullptr,
             "training during the rollout cannot stream the gradient into ZeRO stage 2's shards");
  const auto t0 = std::chrono::steady_clock::now();
  if (!early_.any) model_.zero_grad();  // the step's first: the gradient starts here
  early_.any = true;
  std::vector<const TrainSample*> part;
  for (const auto& s : samples) part.push_back(&s);
  auto micro = micro_batches_of(part, opts_.micro_batch_seqs, tokenizer_.pad_id());
  for (auto& mb : micro) {
    early_.norm += rl::loss_normaliser(mb.inputs(mb.old_logp), opts_.loss.aggregation);
    backprop(mb, 0, false, &early_.report);
  }
  early_.report.early_sequences += static_cast<int64_t>(samples.size());
  early_.report.early_s += seconds_since(t0);
}

TrainReport PolicyReplica::train(const TrainWork& work, MPI_Comm policy) {
  LEAP_CHECK(optimizer_ != nullptr, "training a replica built for sampling only (no optimizer)");
  LEAP_CHECK(opts_.loss.kl_beta == 0 || reference_ != nullptr, "rl.kl_beta > 0 needs a reference policy");
  const bool deferred = work.deferred_norm;
  LEAP_CHECK(!deferred || (work.ppo_epochs == 1 && work.mini_batches == 1),
             "a normaliser deferred to the step needs one epoch and one mini-batch");
  LEAP_CHECK(!early_.any || deferred, "a gradient trained during the rollout needs deferred_norm");
  // What train_early() accumulated belongs to this step's (only) update; its loss is summed
  // under a normaliser of 1.
  EarlyGradient early = std::exchange(early_, EarlyGradient{});
  TrainReport report = early.report;
  // The kept KV caches were computed with the weights this update changes.
  sampler_.forget_kept();
  const int32_t pad = tokenizer_.pad_id();
  for (int epoch = 0; epoch < work.ppo_epochs; ++epoch) {
    for (int m = 0; m < work.mini_batches; ++m) {
      std::vector<const TrainSample*> part;
      for (const auto& s : work.samples)
        if (s.mini_batch == m) part.push_back(&s);
      auto micro = micro_batches_of(part, opts_.micro_batch_seqs, pad);
      // The normaliser is global: summed over every micro-batch of every rank (and the sequences
      // trained during the rollout) before any loss, or with deferred_norm before the step.
      double local_norm = early.norm;
      for (const auto& mb : micro) local_norm += rl::loss_normaliser(mb.inputs(mb.old_logp), opts_.loss.aggregation);
      const double global_norm = allreduce_sum(local_norm, policy);
      if (global_norm <= 0) continue;  // nothing to learn in this mini-batch on any rank
      // ZeRO stage 2 reduces during every backward: each rank runs as many as the busiest.
      const int passes = backward_passes(model_, static_cast<int>(micro.size()), policy);
      if (!early.any) model_.zero_grad();
      TrainReport part_report;
      for (auto& mb : micro) backprop(mb, deferred ? 0 : global_norm, &mb == &micro.back(), &part_report);
      for (int i = static_cast<int>(micro.size()); i < passes; ++i) model_.backward_nothing();
      // This rank may hold no micro-batch of this mini-batch; it still takes part.
      const model::StepStats s =
          sum_and_step(model_, *optimizer_, opts_.reducer, opts_.zero, policy, deferred ? 1.0 / global_norm : 1.0);
      if (deferred) {  // both parts' losses were summed under 1
        part_report.loss = (part_report.loss + report.loss) / global_norm;
        report.loss = 0;
      }
      report.merge(part_report);
      report.grad_norm = s.grad_norm;
      report.lr = s.lr;
    }
  }
  return report;
}

Status PolicyReplica::write_checkpoint(MPI_Comm policy, const io::CheckpointRequest* req) {
  LEAP_CHECK(optimizer_ != nullptr, "a checkpoint of a replica built for sampling only (no optimizer)");
  return mpi::write_checkpoint(policy, req, model_, *optimizer_, opts_.zero ? opts_.zero->plan : nullptr);
}

uint64_t PolicyReplica::params_checksum() const {
  return backend_checksum(model_.backend(), model_.params(), model_.num_params());
}

}  // namespace leap::mpi
