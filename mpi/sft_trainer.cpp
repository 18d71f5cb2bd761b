// SFT material (verified rewrites and repair turns) and the data-parallel SFT loop.
#include "mpi/sft_trainer.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/check.h"
#include "common/rng.h"
#include "model/token_batch.h"
#include "mpi/grad_reduce.h"
#include "mpi/optimizer_step.h"
#include "mpi/outcome.h"
#include "mpi/work_balance.h"
#include "rl/sft_examples.h"
#include "tasks/task_sampler.h"

namespace leap::mpi {

void SftOptions::declare(OptionSet& opts) {
  opts.add("sft.batch_seqs", &batch_seqs, 16, "SFT: examples per optimizer step, over all policy ranks.", {.min = 1});
  opts.add("sft.augment", &augment, 2,
           "SFT: verified rewrites of each reference (renamed kernels and variables, other block sizes).",
           {.min = 0, .max = 16});
  opts.add("sft.rename_kernels", &rename_kernels, true,
           "SFT: let rewrites rename the kernels (name + _kernel, _v2, ...). Turn off for suites whose prompts name "
           "the kernel (tasks/families.jsonl): the policy should copy the name, and a tiny one that learned to draw "
           "suffixes drew a different one in the launch line than in the definition.");
  opts.add("sft.repairs", &repairs, true,
           "SFT: add repair turns (a broken reference, the sandbox's real feedback, the fix).");
  opts.add("sft.prompt_loss_weight", &prompt_loss_weight, 0.0,
           "SFT: weight of the prompt's tokens in the loss, against 1 for the answer's. 0 trains on the answers "
           "alone; above 0 also trains next-token prediction on the prompts (for the demo policy v2, 0.5 did no "
           "better than 0: models/demo-v2/README.md).",
           {.min = 0.0, .max = 1.0});
  opts.add("sft.log_every", &log_every, 10, "SFT: log the loss every N steps.", {.min = 1});
  opts.add("sft.save_to", &save_to, std::string(""),
           "SFT: also write the final policy (config.json + model.safetensors) to this folder, replacing it whole "
           "(its other files are kept).");
  opts.add("sft.save_dtype", &save_dtype, std::string("f32"),
           "SFT: how sft.save_to stores the weights: f32, or bf16 (half the bytes, for a policy to commit or ship; "
           "the checkpoints' resume state stays f32).",
           {.choices = {"f32", "bf16"}});
}

namespace {

// The prompt's ids, then the answer as plain text and the template's end of the message.
Expected<TrainSample> make_sample(const rl::PromptBuilder& prompts, const rl::BuiltPrompt& prompt,
                                  const std::string& answer) {
  TrainSample s;
  s.tokens = prompt.ids;
  s.prompt_len = static_cast<int32_t>(s.tokens.size());
  LEAP_ASSIGN_OR_RETURN(auto rest, prompts.answer_ids(prompt, answer));
  s.tokens.insert(s.tokens.end(), rest.begin(), rest.end());
  return s;
}

}  // namespace

Expected<std::vector<TrainSample>> build_sft_material(const tasks::Suite& suite, const rl::PromptBuilder& prompts,
                                                      JobDispatcher& dispatcher,
                                                      const SftOptions& opts, uint64_t seed, size_t max_tokens,
                                                      SftMaterialStats* stats) {
  struct Candidate {
    int task;
    std::string answer;
    bool broken;
  };
  std::vector<Candidate> candidates;
  Rng rng(seed, 0x5f7);
  for (size_t i = 0; i < suite.tasks.size(); ++i) {
    const tasks::Task& t = suite.tasks[i];
    if (t.split != tasks::Split::kTrain) continue;
    ++stats->tasks;
    candidates.push_back({static_cast<int>(i), t.reference, false});
    for (auto& v : rl::augment_answer(t, t.reference, rng, opts.augment, opts.rename_kernels))
      candidates.push_back({static_cast<int>(i), std::move(v.answer), false});
    if (opts.repairs)
      for (auto& v : rl::break_answer(t, t.reference)) candidates.push_back({static_cast<int>(i), std::move(v.answer), true});
  }
  std::vector<SandboxJob> jobs;
  for (size_t c = 0; c < candidates.size(); ++c)
    jobs.push_back({static_cast<int64_t>(c), candidates[c].task, candidates[c].answer});
  LEAP_ASSIGN_OR_RETURN(auto outcomes, dispatcher.dispatch(jobs, -1, 0));

  std::vector<TrainSample> out;
  for (const auto& o : outcomes) {
    const Candidate& c = candidates[static_cast<size_t>(o.uid)];
    const tasks::Task& t = suite.tasks[static_cast<size_t>(c.task)];
    const bool ok = o.verdict == static_cast<int32_t>(sandbox::Verdict::kOk);
    const bool is_reference = !c.broken && c.answer == t.reference;
    if (is_reference && !ok)
      return internal_error(fmt::format("the reference of {} does not pass the sandbox ({}): {}", t.id,
                                        sandbox::verdict_name(static_cast<sandbox::Verdict>(o.verdict)), o.feedback));
    if (!c.broken) {
      if (!ok) {
        ++stats->rewrites_dropped;
        continue;
      }
      LEAP_ASSIGN_OR_RETURN(rl::BuiltPrompt p, prompts.build(t, {}));
      LEAP_ASSIGN_OR_RETURN(TrainSample s, make_sample(prompts, p, c.answer));
      if (!p.fits || s.tokens.size() > max_tokens) {
        ++stats->too_long;
        continue;
      }
      out.push_back(std::move(s));
      ++(is_reference ? stats->references : stats->rewrites);
    } else {
      if (ok || o.verdict == static_cast<int32_t>(sandbox::Verdict::kSandboxError)) {
        ++stats->repairs_dropped;  // the "broken" rewrite still passes: nothing to repair
        continue;
      }
      std::vector<rl::PreviousTurn> history = {rl::previous_turn(c.answer, to_verify_result(o))};
      LEAP_ASSIGN_OR_RETURN(rl::BuiltPrompt p, prompts.build(t, history));
      LEAP_ASSIGN_OR_RETURN(TrainSample s, make_sample(prompts, p, t.reference));
      if (!p.fits || s.tokens.size() > max_tokens) {
        ++stats->too_long;
        continue;
      }
      out.push_back(std::move(s));
      ++stats->repairs;
    }
  }
  // Outcomes arrive in any order; sort by content so every run trains on the same sequence.
  std::sort(out.begin(), out.end(), [](const TrainSample& a, const TrainSample& b) { return a.tokens < b.tokens; });
  return out;
}

namespace {
// The one rule: position t (1 <= t < length) predicts token t, a prompt token or an answer token.
float position_weight(size_t t, const TrainSample& e, double prompt_weight) {
  return t < static_cast<size_t>(e.prompt_len) ? static_cast<float>(prompt_weight) : 1.f;
}
}  // namespace

std::vector<float> sft_loss_weights(const std::vector<const TrainSample*>& seqs, int T, double prompt_weight) {
  std::vector<float> w(seqs.size() * static_cast<size_t>(T), 0.f);
  for (size_t b = 0; b < seqs.size(); ++b) {
    const auto& e = *seqs[b];
    LEAP_CHECK(e.tokens.size() <= static_cast<size_t>(T), "an SFT example is longer than its micro-batch");
    for (size_t t = 1; t < e.tokens.size(); ++t) w[b * static_cast<size_t>(T) + t] = position_weight(t, e, prompt_weight);
  }
  return w;
}

double sft_loss_tokens(const TrainSample& e, double prompt_weight) {
  double sum = 0;
  for (size_t t = 1; t < e.tokens.size(); ++t) sum += position_weight(t, e, prompt_weight);
  return sum;
}

std::string sft_material_hash(const std::vector<TrainSample>& examples) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over (prompt_len, length, tokens) of each example
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const auto& e : examples) {
    mix(static_cast<uint64_t>(e.prompt_len));
    mix(e.tokens.size());
    for (int32_t t : e.tokens) mix(static_cast<uint32_t>(t));
  }
  return fmt::format("{:016x}", h);
}

Expected<SftReport> train_sft(model::Transformer& model, model::AdamW& optimizer,
                              const std::vector<TrainSample>& examples, int steps, int micro_batch_seqs,
                              const SftOptions& opts, uint64_t seed, MPI_Comm policy, const Logger& log,
                              GradReducer* reducer, const ZeroShard* zero, const SftPosition& from,
                              const SftStepDone& step_done) {
  SftReport report;
  report.steps = from.next_step;
  int rank = 0, size = 1;
  MPI_Comm_rank(policy, &rank);
  MPI_Comm_size(policy, &size);
  std::vector<int> pool(examples.size());
  for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<int>(i);
  tasks::TaskSampler sampler(pool, seed ^ 0x5f75f7ull);  // the same draws on every rank
  sampler.set_state(from.data_order);
  double window = 0;
  int window_n = 0;
  for (int step = from.next_step; step < steps; ++step) {
    auto batch = sampler.next_batch(opts.batch_seqs);
    std::vector<int64_t> weights;
    double loss_tokens = 0;  // the loss normaliser: every position's weight, over the whole batch
    for (int i : batch) {
      const auto& e = examples[static_cast<size_t>(i)];
      weights.push_back(static_cast<int64_t>(e.tokens.size()));
      loss_tokens += sft_loss_tokens(e, opts.prompt_loss_weight);
    }
    auto owner = balance_by_weight(weights, size);
    std::vector<const TrainSample*> mine;
    for (size_t i = 0; i < batch.size(); ++i)
      if (owner[i] == rank) mine.push_back(&examples[static_cast<size_t>(batch[i])]);
    sort_by_length(mine);
    // ZeRO stage 2 reduces during every backward: each rank runs as many as the busiest.
    const int micro_batches = static_cast<int>((mine.size() + static_cast<size_t>(micro_batch_seqs) - 1) /
                                               static_cast<size_t>(micro_batch_seqs));
    const int passes = backward_passes(model, micro_batches, policy);
    model.zero_grad();
    double loss = 0;
    for (size_t i = 0; i < mine.size(); i += static_cast<size_t>(micro_batch_seqs)) {
      std::vector<std::vector<int32_t>> seqs;
      size_t end = std::min(mine.size(), i + static_cast<size_t>(micro_batch_seqs));
      for (size_t j = i; j < end; ++j) seqs.push_back(mine[j]->tokens);
      auto tb = model::TokenBatch::from_sequences(seqs);
      const std::vector<float> mask = sft_loss_weights(
          {mine.begin() + static_cast<long>(i), mine.begin() + static_cast<long>(end)}, tb.T, opts.prompt_loss_weight);
      // The last micro-batch's backward completes the gradient: its reduction may start there.
      if (end == mine.size()) arm_last_backward(model, reducer, zero);
      auto l = model.sft_step(tb, mask.data(), static_cast<float>(loss_tokens));
      LEAP_CHECK(l.has_value(), "SFT step failed: " << l.status().message());
      loss += *l;
    }
    for (int i = micro_batches; i < passes; ++i) model.backward_nothing();
    const model::StepStats st = sum_and_step(model, optimizer, reducer, zero, policy);
    loss = allreduce_sum(loss, policy);
    if (step == from.next_step) report.first_loss = loss;
    report.last_loss = loss;
    report.steps = step + 1;
    window += loss;
    ++window_n;
    if ((step + 1) % opts.log_every == 0 || step + 1 == steps) {
      log.info("sft step {}/{} | loss {:.4f} (mean of last {}) | grad norm {:.3f} | lr {:.2e}", step + 1, steps,
               window / window_n, window_n, st.grad_norm, st.lr);
      window = 0;
      window_n = 0;
    }
    if (step_done) {
      LEAP_ASSIGN_OR_RETURN(const bool go_on, step_done(step, sampler.state(), step + 1 == steps));
      if (!go_on) break;
    }
  }
  return report;
}

}  // namespace leap::mpi
