// Small engines for the distributed step's tests, whose behaviour is known: completions succeed
// or fail by their seed, the verifier judges by text, and training sums advantages into the
// parameters. Optional delays make generation and verification take time, so the streaming
// pipeline's phases really overlap.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "model/byte_tokenizer.h"
#include "mpi/engines.h"
#include "mpi/grad_reduce.h"
#include "rl/rl_config.h"
#include "sandbox/verdict.h"
#include "tasks/suite.h"

namespace leap::mpi::testing_fakes {

using sandbox::Verdict;

inline const char* kSuite =
    R"({"id": "L1/copy", "level": 1, "family": "elementwise", "prompt": "Copy a to out.", "params": {"n": 1000}, "cpu_params": {"n": 37}, "buffers": [{"name": "a", "dtype": "f32", "shape": ["n"], "role": "in", "init": "normal"}, {"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"}], "reference": "```cuda\n__global__ void k(const float* a, float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = a[i]; }\n// launch: k<<<cdiv(n, 128), 128>>>(a, out, n)\n```", "atol": 0, "rtol": 0, "split": "train"})";

// Two tasks of the same shape (L1/copy, L1/cop2).
inline Expected<tasks::Suite> fake_suite() {
  std::string second = kSuite;
  second.replace(second.find("L1/copy"), 7, "L1/cop2");
  return tasks::parse_suite(std::string(kSuite) + "\n" + second, "fake.jsonl");
}

// Completions: "ok" for seeds divisible by 3, "bad" otherwise; turn>1 prompts flip the odds.
class FakePolicy : public PolicyEngine {
 public:
  std::vector<Completion> generate(const std::vector<RolloutItem>& items) override {
    std::vector<Completion> out;
    for (const auto& it : items) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      bool retry_turn = tok_.decode(it.prompt_ids).find("WRONG") != std::string::npos;
      bool ok = retry_turn ? it.seed % 2 == 0 : it.seed % 3 == 0;
      std::string text = ok ? "ok" : (it.seed % 7 == 0 ? "flaky" : "bad");
      std::vector<int32_t> toks(static_cast<size_t>(2 + it.seed % 5), 1);
      out.push_back({it.uid, text, {1, 2, 3}, toks, std::vector<float>(toks.size(), -0.5f)});
    }
    return out;
  }
  TrainReport train(const TrainWork& work, MPI_Comm policy) override {
    double local = early_[0];
    for (const auto& s : work.samples) local += s.advantage * static_cast<double>(s.tokens.size());
    // Summed in double: the sum does not depend on which rank trained what, as the sequences
    // trained during the rollout go to other ranks than the step's own plan would deal them.
    params_[0] += static_cast<float>(allreduce_sum(local, policy));
    params_[1] += static_cast<float>(allreduce_sum(static_cast<double>(work.samples.size()) + early_[1], policy));
    TrainReport r;
    // A loss that depends on what was trained: this rank's part of the step's advantage-weighted
    // token sum (the coordinator sums the ranks' reports), so pipelines that trained other
    // sequences, or a sequence twice, report another loss.
    r.loss = local;
    r.tokens = static_cast<double>(work.samples.size()) + early_[1];
    r.early_sequences = static_cast<int64_t>(early_[1]);
    early_[0] = early_[1] = 0;
    return r;
  }
  // Training during the rollout adds to the same sums, which train() then completes.
  bool supports_train_early() const override { return train_early_ok; }
  void train_early(const std::vector<TrainSample>& samples) override {
    for (const auto& s : samples) early_[0] += s.advantage * static_cast<double>(s.tokens.size());
    early_[1] += static_cast<double>(samples.size());
  }
  bool train_early_ok = true;
  double early_[2] = {0, 0};
  uint64_t params_checksum() const override { return checksum(params_, 2); }
  float params_[2] = {0, 0};
  model::ByteTokenizer tok_;
  int delay_ms = 0;  // per item generated
};

// "ok" passes; "bad" is a wrong answer; "flaky" is always a sandbox error (the infrastructure's
// fault): the coordinator retries it, then records the sample as void.
class FakeVerifier : public VerifyEngine {
 public:
  int slots() const override { return 2; }
  std::vector<SandboxOutcome> verify(const std::vector<SandboxJob>& jobs) override {
    std::vector<SandboxOutcome> out;
    for (const auto& j : jobs) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      SandboxOutcome o;
      o.uid = j.uid;
      o.slot_ms = delay_ms;
      if (j.answer == "ok") o.verdict = static_cast<int32_t>(Verdict::kOk);
      else if (j.answer == "flaky") o.verdict = static_cast<int32_t>(Verdict::kSandboxError);
      else o.verdict = static_cast<int32_t>(Verdict::kWrongAnswer), o.feedback = "WRONG";
      ++verified_;
      out.push_back(o);
    }
    return out;
  }
  int verified_ = 0;
  int delay_ms = 0;  // per job verified
};

inline rl::RlSections rl_config() {
  rl::RlSections rl;
  rl.rl.group_size = 6;
  rl.rl.max_turns = 3;
  return rl;
}

}  // namespace leap::mpi::testing_fakes
