// Speedup re-verification (sandbox.reverify_speedup): a timed answer faster than the reference by
// more than that factor is run again on new inputs before its speedup counts. The channel here
// is a stand-in for a GPU worker whose outputs and times the test sets: the reference's outputs
// are zeros; a "cheating" answer matches them on the first round's inputs only (as a kernel that
// special-cases the fixed trial inputs would). No NVRTC and no device are needed.
#include <gtest/gtest.h>

#include <cstring>

#include "sandbox/verifier.h"
#include "tasks/inputs.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

using testing::answer;
using testing::kGoodKernel;
using testing::kGoodLaunch;

constexpr double kReferenceMs = 3.0;

class TimedChannel final : public JobChannel {
 public:
  TimedChannel(const SandboxConfig& config, double speedup, bool cheats)
      : first_round_seed_(static_cast<uint64_t>(config.seed)), speedup_(speedup), cheats_(cheats) {}

  JobReport run(const JobRequest& request) override {
    const bool reference = request.code.find("void ref(") != std::string::npos;
    const bool first_round = request.trials.at(0).seed == first_round_seed_;
    if (!reference) candidate_jobs.push_back(request);
    JobReport report;
    for (const TrialSpec& t : request.trials) {
      auto buffers = tasks::generate_inputs(request.task, tasks::params_for(request.task, t.sizes),
                                            t.seed, t.trial);
      EXPECT_TRUE(buffers.has_value());
      std::vector<tasks::BufferData> outputs;
      for (auto& b : *buffers) {
        if (b.role == tasks::Role::kIn) continue;
        if (!reference && cheats_ && !first_round) {
          const float wrong = 1.0f;  // the reference's outputs are zeros
          for (size_t i = 0; i < b.bytes.size(); i += sizeof wrong)
            std::memcpy(&b.bytes[i], &wrong, sizeof wrong);
        }
        outputs.push_back(std::move(b));
      }
      report.outputs.push_back(std::move(outputs));
    }
    if (request.time) {
      report.reference_ms = kReferenceMs;
      report.candidate_ms = kReferenceMs / speedup_;
    }
    return report;
  }
  bool on_gpu() const override { return true; }

  std::vector<JobRequest> candidate_jobs;  // the answer's jobs, in order

 private:
  uint64_t first_round_seed_;
  double speedup_;
  bool cheats_;
};

struct Verified {
  VerifyResult result;
  std::vector<JobRequest> candidate_jobs;
};

Verified verify_at(double speedup, bool cheats) {
  SandboxConfig config;
  EXPECT_EQ(config.reverify_speedup, 20.0);  // the speedups below sit either side of it
  TimedChannel channel(config, speedup, cheats);
  Verifier v(channel, config);
  Verified run;
  run.result = v.verify(testing::relu_scale_task(), answer(kGoodKernel, kGoodLaunch));
  run.candidate_jobs = channel.candidate_jobs;
  return run;
}

TEST(VerifyReverify, SpeedupBelowTheThresholdIsBelievedWithoutARerun) {
  Verified run = verify_at(10.0, /*cheats=*/true);
  EXPECT_EQ(verdict_name(run.result.verdict), "OK") << run.result.feedback;
  EXPECT_DOUBLE_EQ(run.result.speedup.value_or(0), 10.0);
  ASSERT_EQ(run.candidate_jobs.size(), 1u);  // no second round: the cheat goes unseen here
  EXPECT_TRUE(run.candidate_jobs[0].time);
}

TEST(VerifyReverify, SpeedupAboveTheThresholdIsRerunOnNewInputsAndThenCounts) {
  Verified run = verify_at(30.0, /*cheats=*/false);
  EXPECT_EQ(verdict_name(run.result.verdict), "OK") << run.result.feedback;
  EXPECT_DOUBLE_EQ(run.result.speedup.value_or(0), 30.0);
  EXPECT_NE(run.result.feedback.find("speedup 30.00x"), std::string::npos) << run.result.feedback;
  ASSERT_EQ(run.candidate_jobs.size(), 2u);
  const JobRequest& first = run.candidate_jobs[0];
  const JobRequest& again = run.candidate_jobs[1];
  EXPECT_TRUE(first.time);
  EXPECT_FALSE(again.time);  // the rerun checks outputs; the first round's time is the one kept
  ASSERT_EQ(again.trials.size(), first.trials.size());
  for (size_t i = 0; i < first.trials.size(); ++i) {
    EXPECT_NE(again.trials[i].seed, first.trials[i].seed) << "trial " << i << ": same inputs";
    EXPECT_EQ(again.trials[i].sizes, first.trials[i].sizes) << "trial " << i;
  }
}

TEST(VerifyReverify, AnswerRightOnlyOnTheFirstInputsIsAWrongAnswerWithoutASpeedup) {
  Verified run = verify_at(30.0, /*cheats=*/true);
  EXPECT_EQ(verdict_name(run.result.verdict), "WRONG_ANSWER") << run.result.feedback;
  EXPECT_EQ(run.result.feedback.rfind("re-verification with new inputs: ", 0), 0u)
      << run.result.feedback;
  EXPECT_FALSE(run.result.speedup.has_value());
  EXPECT_EQ(run.candidate_jobs.size(), 2u);
}

}  // namespace
}  // namespace leap::sandbox
