// The CPU transformer against PyTorch (make_golden.py): logits, log-probs, the loss, every
// parameter gradient (also at a sampling temperature), five AdamW steps, and a bit-identical
// rerun. Three configurations: Qwen2 with GQA, q/k/v biases and an untied head; Llama with tied
// embeddings, one KV head, explicit head_dim, q/k/v/o biases and rope_parameters; Qwen3 with its
// per-head q/k norms, GQA, tied embeddings and head_dim != hidden/heads.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "backend/cpu_backend.h"
#include "golden_reader.h"
#include "model/checkpoint.h"
#include "model/optimizer.h"

namespace leap::model {
namespace {

using testing::expect_close;
using testing::read_all;

struct GoldenCase {
  std::string dir;
  SafetensorsFile golden;
  TokenBatch batch;
  std::vector<float> weights;
  float normaliser = 0;
};

GoldenCase load_case(const std::string& name) {
  GoldenCase c;
  c.dir = testing::golden_dir() + "/" + name;
  auto f = SafetensorsFile::open(c.dir + "/golden.safetensors");
  EXPECT_TRUE(f.has_value()) << f.status().message()
                             << " (run make_golden.py; ctest does it as a fixture)";
  if (!f) return c;
  c.golden = std::move(*f);
  EXPECT_EQ(read_all(c.golden, "golden_version").at(0), 1.0f) << "golden file version";
  auto lengths = read_all(c.golden, "lengths");
  auto tokens = read_all(c.golden, "tokens");
  c.batch.B = static_cast<int>(lengths.size());
  c.batch.T = static_cast<int>(tokens.size() / lengths.size());
  for (float t : tokens) c.batch.tokens.push_back(static_cast<int32_t>(t));
  for (float l : lengths) c.batch.lengths.push_back(static_cast<int32_t>(l));
  c.weights = read_all(c.golden, "weights");
  c.normaliser = read_all(c.golden, "normaliser").at(0);
  return c;
}

// loss = -sum(w * lp) / norm and its gradient wrt lp, as the RL trainer forms them.
float weighted_loss(const std::vector<float>& lp, const std::vector<float>& w, float norm,
                    std::vector<float>* dlp) {
  double loss = 0;
  dlp->assign(lp.size(), 0.0f);
  for (size_t i = 0; i < lp.size(); ++i) {
    loss -= static_cast<double>(w[i]) * lp[i];
    (*dlp)[i] = -w[i] / norm;
  }
  return static_cast<float>(loss / norm);
}

// Every parameter gradient of the model against the golden's `prefix` + HF name.
void expect_grads(const std::string& label, Transformer& m, const SafetensorsFile& golden,
                  const std::string& prefix) {
  for (const TensorInfo& t : m.layout().tensors()) {
    auto want = read_all(golden, prefix + t.name);
    ASSERT_EQ(want.size(), t.numel) << t.name;
    expect_close(label + t.name, m.grads() + t.offset, want.data(), t.numel);
  }
}

class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, ForwardBackwardAndAdamWMatchPyTorch) {
  GoldenCase c = load_case(GetParam());
  ASSERT_GT(c.batch.B, 0);
  backend::CpuBackend be(2);
  auto model = load_model(c.dir + "/model", be);
  ASSERT_TRUE(model.has_value()) << model.status().message();
  Transformer& m = **model;
  const int B = c.batch.B, T = c.batch.T, V = m.config().vocab_size;

  std::vector<float> lp(static_cast<size_t>(B) * T), dlp;
  ASSERT_TRUE(m.forward(c.batch, lp.data()).is_ok());
  auto want_lp = read_all(c.golden, "logprobs");
  expect_close("logprobs", lp.data(), want_lp.data(), lp.size());
  // Logits: only rows of real tokens (padding rows are not defined by the reference).
  auto want_logits = read_all(c.golden, "logits");
  std::vector<float> got_logits(want_logits.size(), 0.0f);
  for (int b = 0; b < B; ++b)
    std::memcpy(got_logits.data() + static_cast<size_t>(b) * T * V,
                m.logits() + static_cast<size_t>(b) * T * V,
                sizeof(float) * c.batch.lengths[b] * V);
  expect_close("logits", got_logits.data(), want_logits.data(), got_logits.size());

  float loss = weighted_loss(lp, c.weights, c.normaliser, &dlp);
  float want_loss = read_all(c.golden, "loss").at(0);
  expect_close("loss", &loss, &want_loss, 1);

  m.zero_grad();
  m.backward(dlp.data());
  expect_grads("grad.", m, c.golden, "grad.");

  // At a sampling temperature T: log softmax(logits / T) and its gradients (the RL trainer's).
  const float temperature = read_all(c.golden, "tempered.temperature").at(0);
  m.set_logprob_temperature(temperature);
  ASSERT_TRUE(m.forward(c.batch, lp.data()).is_ok());
  auto want_tlp = read_all(c.golden, "tempered.logprobs");
  expect_close("tempered logprobs", lp.data(), want_tlp.data(), lp.size());
  weighted_loss(lp, c.weights, c.normaliser, &dlp);
  m.zero_grad();
  m.backward(dlp.data());
  expect_grads("tempered grad.", m, c.golden, "tempered.grad.");
  // SFT is the cross-entropy of the model's own distribution, whatever temperature RL set.
  m.zero_grad();
  auto sft_loss = m.sft_step(c.batch, c.weights.data(), c.normaliser);
  ASSERT_TRUE(sft_loss.has_value());
  expect_close("sft_step loss at a set temperature", &*sft_loss, &want_loss, 1);
  expect_grads("sft_step grad.", m, c.golden, "grad.");
  m.set_logprob_temperature(1.0);

  OptimConfig oc;
  oc.lr = read_all(c.golden, "adamw.lr").at(0);
  oc.beta1 = read_all(c.golden, "adamw.beta1").at(0);
  oc.beta2 = read_all(c.golden, "adamw.beta2").at(0);
  oc.eps = read_all(c.golden, "adamw.eps").at(0);
  oc.weight_decay = read_all(c.golden, "adamw.weight_decay").at(0);
  oc.grad_clip = read_all(c.golden, "adamw.grad_clip").at(0);
  AdamW opt(oc, m);
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    m.zero_grad();
    ASSERT_TRUE(m.forward(c.batch, lp.data()).is_ok());
    losses.push_back(weighted_loss(lp, c.weights, c.normaliser, &dlp));
    m.backward(dlp.data());
    opt.step();
  }
  auto want_losses = read_all(c.golden, "adamw_losses");
  expect_close("adamw_losses (5 steps)", losses.data(), want_losses.data(), 5);
}

// Two runs from the same checkpoint give bit-identical log-probs, gradients and parameters.
TEST_P(Golden, RerunIsBitIdentical) {
  GoldenCase c = load_case(GetParam());
  ASSERT_GT(c.batch.B, 0);
  backend::CpuBackend be(2);
  auto run = [&](std::vector<float>* lp, std::vector<float>* grads, std::vector<float>* params) {
    auto model = load_model(c.dir + "/model", be);
    ASSERT_TRUE(model.has_value());
    Transformer& m = **model;
    AdamW opt(OptimConfig{.lr = 1e-3, .weight_decay = 0.1}, m);
    std::vector<float> dlp;
    lp->assign(static_cast<size_t>(c.batch.B) * c.batch.T, 0.0f);
    for (int step = 0; step < 2; ++step) {
      m.zero_grad();
      ASSERT_TRUE(m.forward(c.batch, lp->data()).is_ok());
      weighted_loss(*lp, c.weights, c.normaliser, &dlp);
      m.backward(dlp.data());
      grads->assign(m.grads(), m.grads() + m.num_params());
      opt.step();
    }
    params->assign(m.params(), m.params() + m.num_params());
  };
  std::vector<float> lp1, g1, p1, lp2, g2, p2;
  run(&lp1, &g1, &p1);
  run(&lp2, &g2, &p2);
  ASSERT_EQ(g1.size(), g2.size());
  EXPECT_EQ(0, std::memcmp(lp1.data(), lp2.data(), lp1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Configs, Golden,
                         ::testing::Values("qwen2_gqa_bias_untied", "llama_tied_bias",
                                           "qwen3_qk_norm_tied"));

}  // namespace
}  // namespace leap::model
