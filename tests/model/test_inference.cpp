// KV-cache inference and the sampler: decode and extend log-probs equal the full forward's, a
// bf16 cache decodes the values it rounded, later turns reuse a kept cache, generation is
// reproducible from a seed, every stop condition ends a completion where it should, and the
// token selection rules (greedy, top-k, top-p, temperature) pick from the right sets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "backend/cpu_backend.h"
#include "backend/token_select.h"
#include "common/bf16.h"
#include "model/byte_tokenizer.h"
#include "model/optimizer.h"
#include "model/sampler.h"

namespace leap::model {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.model_type = "qwen2";
  c.vocab_size = 262;  // ByteTokenizer's 256 bytes + 6 specials
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 6;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 96;
  c.qkv_bias = true;
  return c;
}

// Qwen3's layer: per-head q/k norms, no biases, and H * head_dim (72) wider than the model (48).
ModelConfig qwen3_config() {
  ModelConfig c = tiny_config();
  c.model_type = "qwen3";
  c.qkv_bias = false;
  c.qk_norm = true;
  c.head_dim = 12;
  return c;
}

class Inference : public ::testing::Test {
 protected:
  // One generator per sequence, streams 0..n-1 of `seed`.
  static std::vector<Rng> generators(uint64_t seed, size_t n) {
    std::vector<Rng> out;
    for (uint64_t i = 0; i < n; ++i) out.emplace_back(seed, i);
    return out;
  }
  std::unique_ptr<Transformer> make(const ModelConfig& c) {
    auto m = std::make_unique<Transformer>(c, be);
    m->init_random(7, 0.3f);  // large weights: peaked, input-dependent distributions
    return m;
  }
  backend::CpuBackend be{2};
  ByteTokenizer tok;
  std::vector<std::vector<int32_t>> prompts = {tok.encode("hello world", false),
                                               tok.encode("ab", false),
                                               tok.encode("__global__ void", false)};
};

// At temperature 1 and at 0.5 (with top-k, which the log-prob ignores): the recorded log-probs
// are the training forward's at the same temperature, and at 0.5 far from the untempered ones.
TEST_F(Inference, DecodeLogprobsEqualFullForward) {
  for (const ModelConfig& config : {tiny_config(), qwen3_config()}) {
    SCOPED_TRACE(config.model_type);
    auto m = make(config);
    Sampler s(*m, &tok);
    for (const double temperature : {1.0, 0.5}) {
      SCOPED_TRACE(::testing::Message() << "temperature " << temperature);
      SamplerConfig sc;
      sc.max_new_tokens = 20;
      sc.stop_at_eos = false;
      sc.temperature = temperature;
      if (temperature != 1.0) sc.top_k = 50;
      Rng rng(42);
      auto out = s.generate(prompts, sc, rng);
      ASSERT_TRUE(out.has_value()) << out.status().message();
      std::vector<std::vector<int32_t>> full;
      for (size_t b = 0; b < prompts.size(); ++b) {
        ASSERT_EQ((*out)[b].tokens.size(), 20u);
        EXPECT_EQ((*out)[b].stop_reason, StopReason::kMaxTokens);
        full.push_back(prompts[b]);
        full.back().insert(full.back().end(), (*out)[b].tokens.begin(), (*out)[b].tokens.end());
      }
      TokenBatch batch = TokenBatch::from_sequences(full);
      std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), lp1(lp.size());
      ASSERT_TRUE(m->forward(batch, lp1.data()).is_ok());
      m->set_logprob_temperature(logprob_temperature(sc));
      ASSERT_TRUE(m->forward(batch, lp.data()).is_ok());
      m->set_logprob_temperature(1.0);
      double max_diff = 0, max_untempered = 0;
      for (size_t b = 0; b < prompts.size(); ++b)
        for (size_t i = 0; i < 20; ++i) {
          const size_t at = b * batch.T + prompts[b].size() + i;
          max_diff = std::fmax(max_diff, std::fabs(lp[at] - (*out)[b].logprobs[i]));
          max_untempered = std::fmax(max_untempered, std::fabs(lp1[at] - (*out)[b].logprobs[i]));
        }
      std::printf(
          "  temperature %.1f: decode vs full forward: max|diff| of log-probs %.3e "
          "(against temperature 1: %.3e)\n",
          temperature, max_diff, max_untempered);
      EXPECT_LE(max_diff, 1e-4);
      if (temperature != 1.0) {
        EXPECT_GT(max_untempered, 0.1);
      }
    }
  }
}

// Activation buffers are reused across batch shapes: results must not depend on what ran before.
TEST_F(Inference, ForwardDoesNotDependOnEarlierBatchShapes) {
  auto m = make(tiny_config());
  TokenBatch small = TokenBatch::from_sequences(prompts);
  TokenBatch big =
      TokenBatch::from_sequences({std::vector<int32_t>(40, 7), std::vector<int32_t>(33, 9),
                                  prompts[1], prompts[0], prompts[2]});
  std::vector<float> a(static_cast<size_t>(small.B) * small.T), b(a.size()),
      scratch(static_cast<size_t>(big.B) * big.T);
  ASSERT_TRUE(m->forward(small, a.data()).is_ok());
  ASSERT_TRUE(m->forward(big, scratch.data()).is_ok());
  ASSERT_TRUE(m->forward(small, b.data()).is_ok());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  // A sequence's log-probs do not depend on its batch neighbours or padding either.
  for (int t = 1; t < static_cast<int>(prompts[0].size()); ++t)
    EXPECT_NEAR(a[t], scratch[3 * big.T + t], 1e-5f);
}

TEST_F(Inference, SameSeedSameCompletionsOtherSeedDiffers) {
  auto m = make(tiny_config());
  Sampler s(*m, &tok);
  SamplerConfig sc;
  sc.max_new_tokens = 16;
  sc.temperature = 1.5;
  Rng a(1), b(1), c(2);
  auto x = s.generate(prompts, sc, a), y = s.generate(prompts, sc, b),
       z = s.generate(prompts, sc, c);
  ASSERT_TRUE(x && y && z);
  bool any_diff = false;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ((*x)[i].tokens, (*y)[i].tokens);
    EXPECT_EQ(0, std::memcmp((*x)[i].logprobs.data(), (*y)[i].logprobs.data(),
                             (*x)[i].logprobs.size() * 4));
    any_diff |= (*x)[i].tokens != (*z)[i].tokens;
  }
  EXPECT_TRUE(any_diff);
}

// Non-finite numbers stop the run with a message that names them: a NaN weight makes the logits
// NaN, which the sampler refuses (it would otherwise decode the vocabulary's last id to the end),
// and a NaN gradient stops the optimizer before it writes any weight.
TEST_F(Inference, NonFiniteLogitsOrGradientsStopTheRunClearly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto m = make(tiny_config());
  Sampler s(*m, &tok);
  SamplerConfig sc;
  sc.max_new_tokens = 4;
  Rng g(1);
  ASSERT_TRUE(s.generate(prompts, sc, g).has_value()) << "finite weights sample";
  const float kept = m->params()[m->num_params() - 1];
  m->params()[m->num_params() - 1] = std::nanf("");
  EXPECT_DEATH((void)s.generate(prompts, sc, g), "the policy's logits are not finite");
  m->params()[m->num_params() - 1] = kept;

  AdamW opt(OptimConfig{}, *m);
  m->zero_grad();
  m->grads()[3] = std::numeric_limits<float>::infinity();
  EXPECT_DEATH(opt.step(), "the gradient is not finite .* at optimizer step 1: the weights were not updated");
  m->grads()[3] = 0.5f;
  const float before = m->params()[3];
  opt.step();
  EXPECT_NE(m->params()[3], before) << "a finite gradient still updates";
}

// When rounding leaves the draw past every weight (u = uniform * total minus each weight stays
// >= 0), the rule takes the last candidate of nonzero weight, as the CUDA kernel does; this row
// (found by search) ends at exactly 0 with the largest uniform below 1, and its last id has weight
// exp(-1000) = 0.
TEST(TokenRule, RoundingNeverDrawsATokenOfZeroWeight) {
  const float logits[6] = {0.04630350321531296f, 2.4611103534698486f, -1.8609015941619873f,
                           -1.2950438261032104f, 2.8407084941864014f, -1000.0f};
  float lp = 0;
  const int32_t id = backend::select_token(logits, 6, backend::TokenRule{}, std::nextafter(1.0, 0.0), &lp);
  EXPECT_EQ(id, 4) << "not id 5, whose probability is 0";
  EXPECT_TRUE(std::isfinite(lp));
}

// With one generator per sequence, a sequence's sample does not depend on its batch.
TEST_F(Inference, PerSequenceGeneratorsMakeSamplesIndependentOfTheBatch) {
  auto m = make(tiny_config());
  Sampler s(*m, &tok);
  SamplerConfig sc;
  sc.max_new_tokens = 12;
  sc.stop_at_eos = false;
  sc.temperature = 1.3;
  std::vector<Rng> rngs = {Rng(5, 0), Rng(5, 1), Rng(5, 2)};
  auto batch = s.generate(prompts, sc, rngs);
  ASSERT_TRUE(batch.has_value());
  std::vector<Rng> alone = {Rng(5, 1)};
  auto single = s.generate({prompts[1]}, sc, alone);
  ASSERT_TRUE(single.has_value());
  EXPECT_EQ((*batch)[1].tokens, (*single)[0].tokens);
  for (size_t i = 0; i < (*single)[0].logprobs.size(); ++i)
    EXPECT_NEAR((*batch)[1].logprobs[i], (*single)[0].logprobs[i], 1e-5f);
  std::vector<Rng> too_few = {Rng(1)};
  EXPECT_FALSE(s.generate(prompts, sc, too_few).has_value());
}

TEST_F(Inference, RepeatedPromptsArePrefilledOnceAndSampleAsIfEachWas) {
  // A group's samples share their prompt; repeats come first, between and after other prompts.
  auto m = make(tiny_config());
  const std::vector<std::vector<int32_t>> group = {prompts[0], prompts[0], prompts[2], prompts[0],
                                                   prompts[1], prompts[2]};
  SamplerConfig sc;
  sc.max_new_tokens = 16;
  sc.stop_at_eos = false;
  sc.temperature = 1.3;
  auto sample = [&](bool share) {
    Sampler s(*m, &tok);
    s.set_share_prefill(share);
    auto out = s.generate(group, sc, generators(11, group.size()));
    EXPECT_TRUE(out.has_value());
    return *out;
  };
  const auto shared = sample(true), each = sample(false);
  size_t differ_between_samples = 0;
  for (size_t b = 0; b < group.size(); ++b) {
    EXPECT_EQ(shared[b].tokens, each[b].tokens) << "sequence " << b;
    ASSERT_EQ(shared[b].logprobs.size(), each[b].logprobs.size());
    for (size_t i = 0; i < each[b].logprobs.size(); ++i)
      EXPECT_NEAR(shared[b].logprobs[i], each[b].logprobs[i], 1e-5f) << "sequence " << b << " token " << i;
    differ_between_samples += shared[b].tokens != shared[0].tokens;
  }
  // The copies are not one sample repeated: each draws from its own generator.
  EXPECT_GT(differ_between_samples, 2u);
}

// Continuous batching: with 2 cache slots for 7 sequences of different lengths, each finished
// sequence's slot takes the next prompt (prefilled there, or copied from a live slot holding the
// same prompt), and every sequence samples what it samples when all decode together; so does it
// when the prompts admitted together are prefilled one or two at a time (set_prefill_batch: a
// decoding batch larger than the training micro-batch).
TEST_F(Inference, ContinuousBatchingRefillsSlotsWithoutChangingSamples) {
  auto m = make(tiny_config());
  const std::vector<std::vector<int32_t>> work = {prompts[0], prompts[1], prompts[0], prompts[0],
                                                  prompts[2], prompts[1], prompts[0]};
  SamplerConfig sc;
  sc.max_new_tokens = 40;
  sc.temperature = 1.3;
  std::vector<int32_t> eos;  // many end ids, so lengths differ widely
  for (int32_t id = 'a'; id < 'a' + 24; ++id) eos.push_back(id);
  auto sample = [&](int max_batch, bool share, int prefill_batch) {
    Sampler s(*m, &tok);
    s.set_eos_ids(eos);
    s.set_max_batch(max_batch);
    s.set_share_prefill(share);
    s.set_prefill_batch(prefill_batch);
    auto out = s.generate(work, sc, generators(21, work.size()));
    EXPECT_TRUE(out.has_value());
    return *out;
  };
  const auto together = sample(0, true, 0);
  std::set<size_t> lengths;
  for (const auto& c : together) lengths.insert(c.tokens.size());
  EXPECT_GE(lengths.size(), 4u) << "lengths must differ, or no slot is freed early";
  for (int max_batch : {0, 1, 2, 3}) {
    for (bool share : {true, false}) {
      for (int prefill_batch : {0, 1, 2}) {
        if (max_batch == 0 && share && prefill_batch == 0) continue;  // `together` itself
        const auto refilled = sample(max_batch, share, prefill_batch);
        for (size_t b = 0; b < work.size(); ++b) {
          EXPECT_EQ(refilled[b].tokens, together[b].tokens)
              << "max_batch " << max_batch << " prefill_batch " << prefill_batch << " sequence " << b;
          EXPECT_EQ(refilled[b].stop_reason, together[b].stop_reason);
          ASSERT_EQ(refilled[b].logprobs.size(), together[b].logprobs.size());
          for (size_t i = 0; i < together[b].logprobs.size(); ++i)
            EXPECT_NEAR(refilled[b].logprobs[i], together[b].logprobs[i], 1e-5f) << "sequence " << b << " token " << i;
        }
      }
    }
  }
}

// A session takes prompts while others decode (the streaming pipeline adds work as it comes): a
// prompt added mid-run joins at the next step, in a slot another sequence freed, and samples what
// it samples when every prompt is given at once.
TEST_F(Inference, SessionAdmitsPromptsAddedWhileOthersDecode) {
  auto m = make(tiny_config());
  const std::vector<std::vector<int32_t>> work = {prompts[0], prompts[1], prompts[2], prompts[0], prompts[1]};
  SamplerConfig sc;
  sc.max_new_tokens = 30;
  sc.temperature = 1.3;
  std::vector<int32_t> eos;  // many end ids, so lengths differ widely
  for (int32_t id = 'a'; id < 'a' + 24; ++id) eos.push_back(id);
  Sampler all_at_once(*m, &tok);
  all_at_once.set_eos_ids(eos);
  auto together = all_at_once.generate(work, sc, generators(31, work.size()));
  ASSERT_TRUE(together.has_value());

  Sampler s(*m, &tok);
  s.set_eos_ids(eos);
  s.set_context(static_cast<int>(work[2].size()) + sc.max_new_tokens);
  auto session = s.open(sc, 2);
  std::map<int64_t, Completion> got;
  auto collect = [&] {
    for (auto& [tag, c] : session->take_finished()) got[tag] = std::move(c);
  };
  ASSERT_TRUE(session->add(work[0], 0, Rng(31, 0)).is_ok());
  ASSERT_TRUE(session->step().is_ok());
  EXPECT_EQ(session->live(), 1);
  // Added while sequence 0 decodes: they wait for the free slot and the next step.
  ASSERT_TRUE(session->add(work[1], 1, Rng(31, 1)).is_ok());
  ASSERT_TRUE(session->add(work[2], 2, Rng(31, 2)).is_ok());
  EXPECT_EQ(session->waiting(), 2);
  ASSERT_TRUE(session->step().is_ok());
  collect();
  EXPECT_EQ(session->waiting() + session->live() + static_cast<int>(got.size()), 3);
  EXPECT_LE(session->waiting(), 1) << "the free slot takes a waiting prompt at the next step";
  int steps = 0;
  bool added_late = false;
  while (!session->idle() || !added_late) {
    if (!added_late && got.size() >= 1) {  // a slot has been freed: more work arrives
      ASSERT_TRUE(session->add(work[3], 3, Rng(31, 3)).is_ok());
      ASSERT_TRUE(session->add(work[4], 4, Rng(31, 4)).is_ok());
      added_late = true;
    }
    ASSERT_TRUE(session->step().is_ok());
    collect();
    ASSERT_LT(++steps, 500);
  }
  ASSERT_EQ(got.size(), work.size());
  for (size_t b = 0; b < work.size(); ++b) {
    const Completion& c = got.at(static_cast<int64_t>(b));
    EXPECT_EQ(c.tokens, (*together)[b].tokens) << "sequence " << b;
    EXPECT_EQ(c.stop_reason, (*together)[b].stop_reason);
    ASSERT_EQ(c.logprobs.size(), (*together)[b].logprobs.size());
    for (size_t i = 0; i < c.logprobs.size(); ++i)
      EXPECT_NEAR(c.logprobs[i], (*together)[b].logprobs[i], 1e-5f) << "sequence " << b << " token " << i;
  }
  // An empty prompt is refused with its index, and the session goes on.
  EXPECT_FALSE(session->add({}, 9, Rng(1)).is_ok());
  EXPECT_TRUE(session->idle());
}

// A session dropped while a sequence decodes (a failed source ends generate_stream early) leaves
// its blocks in use; the next open clears them before it grows the pool, which refuses a pool in
// use, and samples as usual instead of aborting.
TEST_F(Inference, ASessionDroppedMidwayDoesNotBlockTheNextOpen) {
  auto m = make(tiny_config());
  SamplerConfig sc;
  sc.max_new_tokens = 30;
  Sampler s(*m, &tok);
  {
    auto first = s.open(sc, 1, nullptr, static_cast<int>(prompts[0].size()));
    ASSERT_TRUE(first->add(prompts[0], 0, Rng(5, 0)).is_ok());
    ASSERT_TRUE(first->step().is_ok());
    ASSERT_EQ(first->live(), 1);
  }
  auto next = s.open(sc, 4, nullptr, 200);  // more slots and positions: the pool grows
  ASSERT_TRUE(next->add(prompts[1], 1, Rng(5, 1)).is_ok());
  for (int steps = 0; !next->idle(); ++steps) {
    ASSERT_TRUE(next->step().is_ok());
    ASSERT_LT(steps, 100);
  }
  EXPECT_EQ(next->take_finished().size(), 1u);
}

// A group's samples decoded one at a time (one slot, as on a rank that gets them one by one):
// each sibling after the first finds no live sibling to copy; it shares the finished one's kept
// prompt blocks and keeps the first's prefill logits, so it samples exactly what the first did
// (greedy, the same batch size), rather than running its last prompt token again as an extend.
TEST_F(Inference, SiblingsAdmittedAfterTheFirstFinishedReuseItsPrefill) {
  auto m = make(tiny_config());
  std::vector<int32_t> prompt;  // longer than a block of 16, so that blocks are shared
  for (int i = 0; i < 41; ++i) prompt.push_back(prompts[i % 3][static_cast<size_t>(i) % prompts[i % 3].size()]);
  const std::vector<std::vector<int32_t>> group(3, prompt);
  SamplerConfig sc;
  sc.max_new_tokens = 20;
  sc.temperature = 0;  // greedy: every sibling the same tokens
  sc.stop_at_eos = false;
  Sampler s(*m, &tok);
  s.set_max_batch(1);
  auto out = s.generate(group, sc, generators(3, group.size()));
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_EQ(s.counts().prefilled_tokens, static_cast<int64_t>(prompt.size())) << "one prefill for the group";
  for (size_t b = 1; b < group.size(); ++b) {
    EXPECT_EQ((*out)[b].reused_tokens, static_cast<int>(prompt.size())) << "sibling " << b;
    EXPECT_EQ((*out)[b].tokens, (*out)[0].tokens) << "sibling " << b;
    EXPECT_EQ((*out)[b].logprobs, (*out)[0].logprobs) << "sibling " << b << ": bit for bit";
  }
}

// A group's samples reach a streaming rank a few at a time: an identical prompt added while a
// sibling still decodes copies that sibling's slot instead of being prefilled again.
TEST_F(Inference, SessionSharesAPromptWithALiveSiblingAddedEarlier) {
  auto m = make(tiny_config());
  SamplerConfig sc;
  sc.max_new_tokens = 20;
  sc.stop_at_eos = false;
  sc.reuse_kv = false;  // only the live sibling can supply the prompt
  Sampler s(*m, &tok);
  s.set_context(static_cast<int>(prompts[2].size()) + sc.max_new_tokens);
  auto session = s.open(sc, 3);
  ASSERT_TRUE(session->add(prompts[2], 0, Rng(41, 0)).is_ok());
  ASSERT_TRUE(session->step().is_ok());
  ASSERT_TRUE(session->add(prompts[2], 1, Rng(41, 1)).is_ok());
  ASSERT_TRUE(session->step().is_ok());
  std::map<int64_t, Completion> got;
  while (!session->idle()) {
    ASSERT_TRUE(session->step().is_ok());
    for (auto& [tag, c] : session->take_finished()) got[tag] = std::move(c);
  }
  EXPECT_EQ(s.counts().prefilled_tokens, static_cast<int64_t>(prompts[2].size())) << "prefilled once";
  EXPECT_EQ(got.at(1).reused_tokens, static_cast<int>(prompts[2].size()));
  // And it samples what it samples alone.
  Sampler alone(*m, &tok);
  auto single = alone.generate({prompts[2]}, sc, std::vector<Rng>{Rng(41, 1)});
  ASSERT_TRUE(single.has_value());
  EXPECT_EQ(got.at(1).tokens, (*single)[0].tokens);
}

// Extending a cached prompt by new tokens (a later turn), in several chunks, gives the logits of
// prefilling the whole sequence; so does the next decode step after it. Blocks of 4 positions.
TEST_F(Inference, ExtendEqualsPrefillOfTheWholeSequence) {
  for (const ModelConfig& config : {tiny_config(), qwen3_config()}) {
    SCOPED_TRACE(config.model_type);
    const ModelConfig& c = config;
    auto m = make(c);
    const int V = c.vocab_size;
    std::vector<std::vector<int32_t>> suffix = {
        tok.encode(" and then some more text to append", false),
        tok.encode(" second sequence's longer continuation!", false),
        tok.encode(" third: a few tokens", false)};
    std::vector<std::vector<int32_t>> whole;
    size_t rows = 0;
    for (size_t b = 0; b < prompts.size(); ++b) {
      whole.push_back(prompts[b]);
      whole.back().insert(whole.back().end(), suffix[b].begin(), suffix[b].end());
      rows += suffix[b].size();
    }
    ASSERT_GT(rows, static_cast<size_t>(3 + kKvExtendRows)) << "the extend must take two chunks";
    KvCache a(c, be, 3, 96, 4), b(c, be, 3, 96, 4);
    std::vector<float> la(3 * V), lb(3 * V);
    const std::vector<int32_t> slots = {2, 0, 1};
    ASSERT_TRUE(
        m->prefill(TokenBatch::from_sequences(prompts), a, la.data(), slots.data()).is_ok());
    m->extend(suffix, slots.data(), a, la.data());
    ASSERT_TRUE(m->prefill(TokenBatch::from_sequences(whole), b, lb.data(), slots.data()).is_ok());
    auto near = [&](const std::vector<float>& x, const std::vector<float>& y, const char* what) {
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(x[i], y[i], 1e-4f * std::max(1.0f, std::fabs(y[i]))) << what << " " << i;
    };
    near(la, lb, "extend");
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(a.len[slots[i]], static_cast<int>(whole[i].size()));
    const std::vector<int32_t> next = {'x', 'y', 'z'};
    m->decode(next.data(), slots.data(), 3, a, la.data());
    m->decode(next.data(), slots.data(), 3, b, lb.data());
    near(la, lb, "decode after extend");
  }
}

// A later turn whose prompt extends a finished sequence (prompt + sampled tokens + feedback)
// runs only its new tokens, and samples what a full prefill would. Kept sequences are dropped
// for room when the pool has none for them (one slot, kv_keep_sequences = 0), and all of them by
// forget_kept(). With room for them, one slot reuses everything too: the prompts that extend a
// kept sequence are admitted first.
TEST_F(Inference, LaterTurnsReuseTheKeptCache) {
  auto m = make(tiny_config());
  SamplerConfig sc;
  sc.max_new_tokens = 30;  // turn-1 sequences of 11-12 blocks: three do not fit one slot's 24
  sc.temperature = 1.3;
  sc.stop_at_eos = false;
  sc.kv_block_tokens = 4;
  auto rngs_for = [](uint64_t seed) {
    std::vector<Rng> r;
    for (uint64_t i = 0; i < 3; ++i) r.emplace_back(seed, i);
    return r;
  };
  for (auto [max_batch, keep] : std::vector<std::pair<int, int>>{{0, 8}, {1, 0}, {1, 8}}) {
    sc.kv_keep_sequences = keep;
    Sampler s(*m, &tok);
    s.set_max_batch(max_batch);
    s.set_context(96);  // as the policy does: sized for the run, so turn 2 does not grow it
    auto r1 = rngs_for(5);
    auto turn1 = s.generate(prompts, sc, r1);
    ASSERT_TRUE(turn1.has_value());
    std::vector<std::vector<int32_t>> turn2;
    int64_t held = 0;
    for (size_t b = 0; b < prompts.size(); ++b) {
      turn2.push_back(prompts[b]);
      turn2.back().insert(turn2.back().end(), (*turn1)[b].tokens.begin(), (*turn1)[b].tokens.end());
      const auto fb = tok.encode("\nerror: fix", false);
      turn2.back().insert(turn2.back().end(), fb.begin(), fb.end());
      held += static_cast<int64_t>(prompts[b].size() + (*turn1)[b].tokens.size()) - 1;
    }
    const SamplerCounts before = s.counts();
    auto r2 = rngs_for(6);
    auto reused = s.generate(turn2, sc, r2);
    ASSERT_TRUE(reused.has_value());
    const int64_t got = s.counts().reused_tokens - before.reused_tokens;
    if (keep > 0) {
      EXPECT_EQ(got, held) << "every turn-2 prompt extends its kept turn 1, max_batch " << max_batch;
      EXPECT_EQ(s.counts().kept_dropped, 0);
    } else {
      // One slot's pool holds one full-length sequence: the older kept ones made room.
      EXPECT_GT(s.counts().kept_dropped, 0);
      EXPECT_LT(got, held);
    }
    Sampler fresh(*m, &tok);
    SamplerConfig off = sc;
    off.reuse_kv = false;
    fresh.set_max_batch(max_batch);
    auto r3 = rngs_for(6);
    auto prefilled = fresh.generate(turn2, off, r3);
    ASSERT_TRUE(prefilled.has_value());
    EXPECT_EQ(fresh.counts().reused_tokens, 0);
    for (size_t b = 0; b < turn2.size(); ++b) {
      EXPECT_EQ((*reused)[b].tokens, (*prefilled)[b].tokens) << "max_batch " << max_batch << " sequence " << b;
      for (size_t i = 0; i < (*reused)[b].logprobs.size(); ++i)
        EXPECT_NEAR((*reused)[b].logprobs[i], (*prefilled)[b].logprobs[i], 1e-4f);
    }
    // New weights: nothing kept may be used again.
    s.forget_kept();
    const int64_t reused_before = s.counts().reused_tokens;
    std::vector<std::vector<int32_t>> turn3 = turn2;
    for (size_t b = 0; b < turn3.size(); ++b) {
      turn3[b].insert(turn3[b].end(), (*reused)[b].tokens.begin(), (*reused)[b].tokens.end());
      turn3[b].resize(std::min<size_t>(turn3[b].size(), 70));
      turn3[b].push_back('!');
    }
    auto r4 = rngs_for(7);
    ASSERT_TRUE(s.generate(turn3, sc, r4).has_value());
    EXPECT_EQ(s.counts().reused_tokens, reused_before);
  }
}

// A pool without room for kept sequences (kv_keep_sequences = 0) and exactly full: the second of
// two equal prompts shares the kept first one's prefix, whose partial block needs a copy; the
// reclaim frees nothing (it drops the kept sequence, whose blocks the share holds), so the
// partial block itself becomes the new slot's. This used to abort ("blocks are all in use").
TEST_F(Inference, SharingAPartialBlockOfAFullPoolWithoutKeptRoom) {
  auto m = make(tiny_config());
  SamplerConfig sc;
  sc.max_new_tokens = 3;
  sc.temperature = 0;
  sc.stop_at_eos = false;
  sc.kv_block_tokens = 4;
  sc.kv_keep_sequences = 0;
  const std::vector<int32_t> p = {'a', 'b', 'c', 'd', 'e'};  // 5 tokens: a whole block and one more
  Sampler s(*m, &tok);
  s.set_max_batch(1);
  s.set_context(8);  // one slot of 8 positions: a pool of 2 blocks
  Rng rng(9);
  auto out = s.generate({p, p}, sc, rng);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].tokens, (*out)[1].tokens);  // greedy, the same prompt: the same answer
  EXPECT_EQ((*out)[0].tokens.size(), 3u);
}

// A bf16 cache (sampler.kv_cache_dtype = bf16) holds each key and value rounded once to bf16,
// laid out as the fp32 cache is (layer strides, blocks, offsets); test_backend_ops checks that
// decode reads them back exactly. A slot copied from it (a partial block copied, whole ones
// shared) decodes as its source does, and generation through the sampler stays close to the
// fp32 cache's.
TEST_F(Inference, Bf16KvCacheHoldsRoundedValuesAndDecodesThem) {
  const ModelConfig c = tiny_config();
  auto m = make(c);
  const int V = c.vocab_size, KD = c.num_key_value_heads * c.head_dim;
  KvCache f32(c, be, 4, 60, 4), bf(c, be, 4, 60, 4, 0, backend::KvDtype::kBf16);
  EXPECT_EQ(bf.layer_stride() * 2, f32.layer_stride());
  std::vector<float> lf(3 * V), lb(3 * V);
  ASSERT_TRUE(m->prefill(TokenBatch::from_sequences(prompts), f32, lf.data()).is_ok());
  ASSERT_TRUE(m->prefill(TokenBatch::from_sequences(prompts), bf, lb.data()).is_ok());
  EXPECT_EQ(0, std::memcmp(lf.data(), lb.data(), lf.size() * sizeof(float)))
      << "the prefill's own attention reads the fp32 keys, not the cache";
  size_t differ = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (int slot = 0; slot < 3; ++slot)
      for (int pos = 0; pos < f32.len[slot]; ++pos) {
        const size_t at = (static_cast<size_t>(f32.block_of(slot, pos)) * 4 + pos % 4) * KD,
                     bat = (static_cast<size_t>(bf.block_of(slot, pos)) * 4 + pos % 4) * KD;
        for (float* pool : {f32.k, f32.v}) {
          float* fp = pool + l * f32.layer_stride() + at;
          const auto* bp = reinterpret_cast<const uint16_t*>((pool == f32.k ? bf.k : bf.v) +
                                                             l * bf.layer_stride()) + bat;
          for (int i = 0; i < KD; ++i) {
            ASSERT_EQ(f32_to_bf16(fp[i]), bp[i]) << "layer " << l << " slot " << slot << " pos " << pos;
            differ += bf16_to_f32(bp[i]) != fp[i];
          }
        }
      }
  EXPECT_GT(differ, 0u) << "nothing was rounded: the cache is not bf16";
  bf.copy_slot(0, 3);  // 11 positions: two whole blocks shared, three copied
  const std::vector<int32_t> next = {'x', 'y', 'z', 'x'}, slots = {0, 1, 2, 3};
  std::vector<float> lb4(4 * V);
  m->decode(next.data(), slots.data(), 4, bf, lb4.data());
  EXPECT_EQ(0, std::memcmp(lb4.data(), lb4.data() + 3 * V, V * sizeof(float)))
      << "the copied slot decodes as its source";

  Sampler sf(*m, &tok), sb(*m, &tok);
  SamplerConfig sc;
  sc.max_new_tokens = 20;
  sc.stop_at_eos = false;
  SamplerConfig sc_bf = sc;
  sc_bf.kv_cache_dtype = "bf16";
  auto of = sf.generate(prompts, sc, generators(5, 3)), ob = sb.generate(prompts, sc_bf, generators(5, 3));
  ASSERT_TRUE(of.has_value() && ob.has_value());
  double max_diff = 0;
  for (size_t b = 0; b < prompts.size(); ++b)
    for (size_t i = 0; i < (*of)[b].tokens.size() && (*ob)[b].tokens[i] == (*of)[b].tokens[i]; ++i)
      max_diff = std::fmax(max_diff, std::fabs((*of)[b].logprobs[i] - (*ob)[b].logprobs[i]));
  std::printf("  bf16 against fp32 KV cache: max|diff| of log-probs %.3e\n", max_diff);
  // This tiny model's weights are large (peaked distributions), so bf16's 2^-9 relative rounding
  // of the keys and values moves log-probs by a few hundredths; a cache read wrongly moves them
  // by nats.
  EXPECT_GT(max_diff, 0.0);
  EXPECT_LE(max_diff, 0.15);
}

// Every piece of the decode scratch is 64-byte aligned whatever the row count (an odd one made
// every piece after the per-row rstd 4-byte aligned: GEMM outputs a GPU's cuBLASLt wants aligned),
// the pieces do not overlap, and they end within kv_scratch_floats.
TEST(KvCacheTest, ScratchPiecesAreAlignedForAnyRowCount) {
  for (const ModelConfig& config : {tiny_config(), qwen3_config()}) {
    SCOPED_TRACE(config.model_type);
    const ModelConfig& cfg = config;
    for (int rows : {1, 7, 65, 66}) {
      const size_t total = kv_scratch_floats(cfg, rows, 3);
      std::vector<float> buf(total + kKvScratchAlign);
      float* base = buf.data();
      while (reinterpret_cast<uintptr_t>(base) % 64 != 0) ++base;
      const KvScratch d = carve_kv_scratch(cfg, base, rows);
      std::vector<float*> pieces = {d.x, d.ln, d.tmp, d.rstd, d.q, d.atty, d.k, d.v, d.gu, d.h};
      if (cfg.qk_norm) pieces.insert(pieces.end(), {d.q_lin, d.k_lin, d.qk_rstd});
      pieces.push_back(d.logits);
      for (size_t i = 0; i < pieces.size(); ++i) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[i]) % 64, 0u)
            << "piece " << i << " rows " << rows;
        if (i > 0) {
          EXPECT_GT(pieces[i], pieces[i - 1]);
        }
      }
      EXPECT_EQ(d.rstd + rows <= d.q, true);
      EXPECT_LE(d.logits + static_cast<size_t>(cfg.vocab_size) * 3, base + total) << rows;
    }
  }
}

// A pool first made for sequences shorter than a block (its block clamped to their length) gets
// the block size asked for once it grows for longer ones: one-position blocks would make a block
// table as long as the sequence and a kept prefix of one token worth reusing.
TEST(KvCacheTest, GrowingForLongerSequencesRestoresTheAskedBlockSize) {
  backend::CpuBackend be(1);
  const ModelConfig c = tiny_config();
  KvCache cache(c, be, 2, 1, 16, 1);  // one position: the block is clamped to 1
  EXPECT_EQ(cache.block_size, 1);
  cache.grow(2, 64);
  EXPECT_EQ(cache.block_size, 16);
  EXPECT_EQ(cache.free_blocks(), (2 + 1) * 4);
  cache.reserve(0, 40);
  EXPECT_EQ(cache.free_blocks(), (2 + 1) * 4 - 3);
}

// The paged cache's block accounting: whole blocks are shared, a partial one copied, kept blocks
// outlive their slot, and a full pool reclaims kept ones.
TEST(KvCacheTest, SharesWholeBlocksCopiesPartialOnesAndCountsHolders) {
  backend::CpuBackend be(1);
  const ModelConfig c = tiny_config();
  KvCache cache(c, be, 3, 40, 4, 0);  // 3 slots x 10 blocks, no room kept
  const int all = cache.free_blocks(), KD = c.num_key_value_heads * c.head_dim;
  EXPECT_EQ(all, 30);
  auto at = [&](int l, int slot, int pos) {
    return cache.k + l * cache.layer_stride() +
           (static_cast<size_t>(cache.block_of(slot, pos)) * cache.block_size + pos % cache.block_size) * KD;
  };
  cache.reserve(0, 10);
  cache.len[0] = 10;
  EXPECT_EQ(cache.free_blocks(), all - 3);
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (int p = 0; p < 10; ++p) at(l, 0, p)[0] = static_cast<float>(100 * l + p);
  cache.copy_slot(0, 1, 10);  // blocks 0-1 shared, positions 8-9 copied into a new block
  EXPECT_EQ(cache.free_blocks(), all - 4);
  EXPECT_EQ(cache.block_of(1, 0), cache.block_of(0, 0));
  EXPECT_NE(cache.block_of(1, 9), cache.block_of(0, 9));
  for (int l = 0; l < c.num_hidden_layers; ++l)
    for (int p = 0; p < 10; ++p) EXPECT_EQ(at(l, 1, p)[0], static_cast<float>(100 * l + p));
  KvBlocks kept = cache.detach(0);  // slot 0's blocks, still held
  EXPECT_EQ(cache.len[0], 0);
  EXPECT_EQ(cache.free_blocks(), all - 4);
  cache.clear(1);  // the shared blocks stay: the kept list holds them
  EXPECT_EQ(cache.free_blocks(), all - 3);
  cache.share(2, kept, 6);  // one whole block shared, positions 4-5 copied
  EXPECT_EQ(cache.free_blocks(), all - 4);
  EXPECT_EQ(at(0, 2, 5)[0], 5.0f);
  cache.attach(0, std::move(kept), 9);  // its own next turn: all three blocks back in a slot
  EXPECT_EQ(cache.len[0], 9);
  cache.clear(0);
  cache.clear(2);
  EXPECT_EQ(cache.free_blocks(), all);
  // A full pool calls reclaim, which may free kept blocks.
  cache.reserve(0, 40);
  cache.reserve(1, 40);
  cache.reserve(2, 36);
  KvBlocks held = cache.detach(2);
  int reclaims = 0;
  cache.reclaim = [&] {
    ++reclaims;
    if (held.blocks.empty()) return false;
    cache.release(held);
    return true;
  };
  cache.reserve(2, 40);
  EXPECT_EQ(reclaims, 1);  // one block was free, the kept nine made room for the rest
  EXPECT_EQ(cache.free_blocks(), 0);
}

TEST_F(Inference, TopKOneAndTinyTopPAreGreedy) {
  auto m = make(tiny_config());
  Sampler s(*m, &tok);
  SamplerConfig greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 12;
  greedy.stop_at_eos = false;
  SamplerConfig k1 = greedy, p0 = greedy;
  k1.temperature = 0.8;
  k1.top_k = 1;
  p0.temperature = 2.0;
  p0.top_p = 1e-6;
  Rng r(3);
  auto g = s.generate(prompts, greedy, r), a = s.generate(prompts, k1, r),
       b = s.generate(prompts, p0, r);
  ASSERT_TRUE(g && a && b);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ((*g)[i].tokens, (*a)[i].tokens);
    EXPECT_EQ((*g)[i].tokens, (*b)[i].tokens);
  }
}

TEST_F(Inference, StopStringEosAndContextEndCompletions) {
  auto m = make(tiny_config());
  SamplerConfig sc;
  sc.temperature = 0;
  sc.max_new_tokens = 24;
  sc.stop_at_eos = false;
  Rng r(0);
  std::vector<std::vector<int32_t>> one = {prompts[0]};
  Sampler s(*m, &tok);
  auto free_run = s.generate(one, sc, r);
  ASSERT_TRUE(free_run.has_value());
  const auto& ref = (*free_run)[0].tokens;
  ASSERT_EQ(ref.size(), 24u);

  // A stop string taken from the free run's tokens 3..5 ends the completion at or before them.
  std::string text = tok.decode(ref);
  std::string stop = tok.decode(std::span<const int32_t>(ref.data() + 3, 3));
  // (The option syntax reserves "||" and backslash escapes; skip those rare draws.)
  ASSERT_TRUE(stop.find("||") == std::string::npos && stop.find('\\') == std::string::npos)
      << "pick other tokens";
  {
    sc.stop = "zzz-never||" + stop;
    auto stopped = s.generate(one, sc, r);
    ASSERT_TRUE(stopped.has_value());
    const auto& c = (*stopped)[0];
    EXPECT_EQ(c.stop_reason, StopReason::kStopString);
    EXPECT_LE(c.tokens.size(), 6u);
    EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.end(), ref.begin()));
    std::string got = tok.decode(c.tokens);
    EXPECT_TRUE(got.ends_with(stop)) << got;
    sc.stop.clear();
  }

  // EOS: a model whose eos_token_id is the free run's 5th token (no tokenizer: config EOS).
  ModelConfig with_eos = tiny_config();
  with_eos.eos_token_id = ref[4];
  auto m2 = make(with_eos);
  Sampler s2(*m2, nullptr);
  sc.stop_at_eos = true;
  auto e = s2.generate(one, sc, r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)[0].stop_reason, StopReason::kEos);
  EXPECT_EQ((*e)[0].tokens.back(), ref[4]);
  EXPECT_LE((*e)[0].tokens.size(), 5u);
  // Several EOS ids (generation_config.json's list): the free run's 3rd token ends it, though the
  // config's EOS and the first id of the list are others.
  Sampler s4(*m2, nullptr);
  s4.set_eos_ids({-7, ref[2]});
  auto e4 = s4.generate(one, sc, r);
  ASSERT_TRUE(e4.has_value());
  EXPECT_EQ((*e4)[0].stop_reason, StopReason::kEos);
  EXPECT_EQ((*e4)[0].tokens.back(), ref[2]);
  EXPECT_LE((*e4)[0].tokens.size(), 3u);

  // Context: prompt + completion never exceed max_position_embeddings.
  ModelConfig small = tiny_config();
  small.max_position_embeddings = 16;
  auto m3 = make(small);
  Sampler s3(*m3, &tok);
  auto cf = s3.generate({std::vector<int32_t>(13, 'a')}, sc, r);
  ASSERT_TRUE(cf.has_value());
  EXPECT_EQ((*cf)[0].stop_reason, StopReason::kContextFull);
  EXPECT_EQ((*cf)[0].tokens.size(), 3u);
  // A prompt that fills the context, or an empty one, is bad input.
  EXPECT_FALSE(s3.generate({std::vector<int32_t>(16, 'a')}, sc, r).has_value());
  EXPECT_FALSE(s3.generate({std::vector<int32_t>{}}, sc, r).has_value());
  EXPECT_FALSE(s3.generate({std::vector<int32_t>{999}}, sc, r).has_value());
}

TEST(SampleToken, FrequenciesFollowTemperatureTopKTopP) {
  // probabilities 0.4, 0.3, 0.2, 0.1
  const std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f),
                                     std::log(0.1f)};
  auto freq = [&](const SamplerConfig& sc) {
    Rng rng(11);
    std::vector<double> f(4, 0);
    float lp;
    for (int i = 0; i < 20000; ++i) f[sample_token(logits.data(), 4, sc, rng, &lp)] += 1.0 / 20000;
    return f;
  };
  SamplerConfig plain;
  auto f = freq(plain);
  EXPECT_NEAR(f[0], 0.4, 0.015);
  EXPECT_NEAR(f[3], 0.1, 0.015);
  SamplerConfig k2;
  k2.top_k = 2;
  f = freq(k2);
  EXPECT_EQ(f[2] + f[3], 0.0);
  EXPECT_NEAR(f[0], 0.4 / 0.7, 0.015);
  SamplerConfig p5;
  p5.top_p = 0.5;  // 0.4 < 0.5 <= 0.7: the two most likely stay
  f = freq(p5);
  EXPECT_EQ(f[2] + f[3], 0.0);
  SamplerConfig hot;
  hot.temperature = 1000.0;  // nearly uniform
  f = freq(hot);
  EXPECT_NEAR(f[3], 0.25, 0.015);
  // The recorded log-prob is of the tempered distribution over all V, untruncated by top-k:
  // at temperature 1 the model's own (these logits are log-probabilities), at 0.5 log
  // softmax(2 * logits) (what the training forward differentiates at that temperature).
  Rng rng(5);
  float lp = 0;
  int32_t t = sample_token(logits.data(), 4, k2, rng, &lp);
  EXPECT_NEAR(lp, logits[t], 1e-6);
  SamplerConfig cold = k2;
  cold.temperature = 0.5;
  double z = 0;
  for (float l : logits) z += std::exp(2.0 * l);
  for (int i = 0; i < 50; ++i) {
    t = sample_token(logits.data(), 4, cold, rng, &lp);
    ASSERT_LT(t, 2);
    EXPECT_NEAR(lp, 2.0 * logits[t] - std::log(z), 1e-6);
  }
}

TEST(SampleToken, PaddedIdsAreNeverDrawnButCountInTheLogProb) {
  // Ids 4 and 5 are padding rows (vocab_size above the tokenizer's 4 ids) with the largest logits.
  const std::vector<float> logits = {0.0f, 1.0f, 0.5f, -1.0f, 9.0f, 8.0f};
  for (double temperature : {0.0, 1.0, 5.0}) {
    SamplerConfig sc;
    sc.temperature = temperature;
    const double s = temperature > 0 ? 1.0 / temperature : 1.0;  // greedy records temperature 1
    double lse = 0;
    for (float l : logits) lse += std::exp(s * l);
    lse = std::log(lse);
    Rng rng(11);
    for (int i = 0; i < 2000; ++i) {
      float lp = 0;
      int32_t t = sample_token(logits.data(), 6, sc, rng, &lp, /*sample_below=*/4);
      ASSERT_LT(t, 4) << "temperature " << temperature;
      EXPECT_NEAR(lp, s * logits[static_cast<size_t>(t)] - lse, 1e-5);  // over all six rows
    }
  }
}

// At a temperature so low that exp((logit - padded max) / T) underflows for every drawable id,
// the draw must still follow the drawable logits (in effect their argmax, id 1), not fall to the
// last candidate: the weights are measured from the drawable maximum.
TEST(SampleToken, ALowTemperatureUnderAPaddedMaximumStillFollowsTheLogits) {
  const std::vector<float> logits = {0.0f, 1.0f, 0.5f, -1.0f, 9.0f, 8.0f};
  for (double temperature : {0.01, 0.001}) {
    SamplerConfig sc;
    sc.temperature = temperature;
    Rng rng(3);
    for (int i = 0; i < 200; ++i) {
      float lp = 0;
      EXPECT_EQ(sample_token(logits.data(), 6, sc, rng, &lp, /*sample_below=*/4), 1) << "temperature " << temperature;
    }
  }
}

TEST(SamplerConfigTest, StopStringsSplitAndUnescape) {
  SamplerConfig sc;
  sc.stop = "```||\\n\\nEND||";
  auto s = sc.stop_strings();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], "```");
  EXPECT_EQ(s[1], "\n\nEND");
}

TEST(ByteTokenizerTest, RoundTripAndSpecials) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.vocab_size(), 262);
  auto ids = tok.encode("a<|eos|>b", true);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], tok.eos_id());
  EXPECT_EQ(tok.decode(ids), "a<|eos|>b");
  EXPECT_EQ(tok.encode("a<|eos|>b", false).size(), 9u);  // untrusted text: no specials
  const std::string raw("\xff\x00z", 3);
  EXPECT_EQ(tok.decode(tok.encode(raw, false)), raw);
}

}  // namespace
}  // namespace leap::model
