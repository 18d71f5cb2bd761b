// A whole RL step through the rl API with a scripted sandbox, as the coordinator runs it: turn 1
// for every sample, DCP once per group, debugging turns with prompts built from the previous
// answer and verdict, then rewards, advantages, statistics and training items. Every number is
// worked by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/byte_tokenizer.h"
#include "rl/prompt_builder.h"
#include "rl/step_scores.h"
#include "rl_test_util.h"

namespace leap::rl {
namespace {

using sandbox::Verdict;
using Script = std::vector<Verdict>;  // what the sandbox answers at turn 1, 2, ...

constexpr Verdict OK = Verdict::kOk, WA = Verdict::kWrongAnswer, CE = Verdict::kCompileError;

TEST(StepScores, ScriptedStepEndToEnd) {
  const std::vector<std::vector<Script>> scripts = {
      {{OK}, {OK}, {OK}, {OK}},                      // easy: all pass at once
      {{WA, OK}, {CE, CE, WA}, {OK}, {WA, WA, OK}},  // 3 of 4 fail: expanded
      {{WA, OK}, {WA}, {CE}, {WA}},                  // all fail: hopeless, no second chance
      {{OK}, {OK}, {OK}, {CE, OK}},                  // 1 of 4 fails: easy
  };
  DcpController dcp({.mode = DcpMode::kStatic, .max_turns = 3});
  model::ByteTokenizer tok;
  auto format = *make_prompt_format("plain", "", tok, {}, MultiTurn::kAppend, 0);
  PromptBuilder prompts({.max_prompt_tokens = 100000}, format);
  tasks::Task task;
  task.prompt = "Add two vectors.";

  std::vector<GroupRecord> groups(scripts.size());
  for (size_t g = 0; g < scripts.size(); ++g) {
    auto& rec = groups[g];
    for (const auto& script : scripts[g])
      rec.trajectories.push_back({{{script[0], std::nullopt, 100}}});
    rec.decision = dcp.decide(rec.trajectories);
    for (auto next = dcp.continuing_samples(rec.decision, rec.trajectories); !next.empty();
         next = dcp.continuing_samples(rec.decision, rec.trajectories)) {
      for (size_t s : next) {
        auto& t = rec.trajectories[s];
        sandbox::VerifyResult last{.verdict = t.turns.back().verdict, .feedback = "line 1: error"};
        std::vector<PreviousTurn> history = {previous_turn("```cuda\n// attempt\n```", last)};
        auto built = prompts.build(task, history);
        ASSERT_TRUE(built.has_value());
        const BuiltPrompt& p = *built;
        ASSERT_TRUE(p.fits);
        EXPECT_NE(p.text.find(std::string("Verdict: ") +
                              std::string(sandbox::verdict_name(last.verdict))),
                  std::string::npos);
        t.turns.push_back({scripts[g][s][t.turns.size()], std::nullopt, 100});
      }
    }
  }
  EXPECT_EQ(groups[0].decision.label, DcpLabel::kEasy);
  EXPECT_EQ(groups[1].decision.label, DcpLabel::kExpanded);
  EXPECT_EQ(groups[2].decision.label, DcpLabel::kHopeless);
  EXPECT_EQ(groups[3].decision.label, DcpLabel::kEasy);
  EXPECT_EQ(groups[1].trajectories[1].num_turns(), 3);
  EXPECT_EQ(groups[3].trajectories[3].num_turns(), 1);  // easy group: its failure gets no retry

  auto scores = score_step(groups, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank});
  // Group 1: s2 (turn 1) beats all: 1; s0 (turn 2) beats s3, s1: 1/3; s3 (turn 3): -1/3; s1: -1.
  const auto& r1 = scores.groups[1].rewards;
  EXPECT_NEAR(r1[0], 1 / 3.0, 1e-12);
  EXPECT_NEAR(r1[1], -1.0, 1e-12);
  EXPECT_NEAR(r1[2], 1.0, 1e-12);
  EXPECT_NEAR(r1[3], -1 / 3.0, 1e-12);
  // Group 3: three equal successes beat the failure and draw among themselves.
  EXPECT_NEAR(scores.groups[3].rewards[0], 1 / 3.0, 1e-12);
  EXPECT_NEAR(scores.groups[3].rewards[3], -1.0, 1e-12);
  // Groups 0 (all equal passes) and 2 (all failures) carry nothing.
  EXPECT_TRUE(scores.groups[0].skip);
  EXPECT_TRUE(scores.groups[2].skip);
  EXPECT_EQ(scores.n_dropped_groups, 2);

  EXPECT_EQ(scores.dcp.n_groups, 4);
  EXPECT_EQ(scores.dcp.n_easy, 2);
  EXPECT_EQ(scores.dcp.n_hopeless, 1);
  EXPECT_EQ(scores.dcp.n_expanded, 1);
  EXPECT_EQ(scores.dcp.samples_expanded, 3);
  EXPECT_EQ(scores.dcp.sandbox_jobs, 4 + (2 + 3 + 1 + 3) + 4 + 4);
  EXPECT_EQ(scores.n_samples, 16);
  EXPECT_EQ(scores.n_turn_samples, 21);
  EXPECT_NEAR(scores.pass_turn1, (4 + 1 + 0 + 3) / 16.0, 1e-12);
  EXPECT_NEAR(scores.pass_final, (4 + 3 + 0 + 3) / 16.0, 1e-12);
  // Training items: every turn of groups 1 (9 turns) and 3 (4 turns).
  ASSERT_EQ(scores.train_items.size(), 13u);
  EXPECT_EQ(scores.train_items.front().group, 1);
  EXPECT_EQ(scores.train_items.back().group, 3);
  for (const auto& item : scores.train_items)
    EXPECT_EQ(item.advantage, scores.groups[item.group].turn_advantage[item.sample][item.turn - 1]);
}

// A step whose every sample is void (prompts too long, say) has no pass rate: NaN, not 0.
TEST(StepScores, AStepOfVoidSamplesHasNoPassRate) {
  std::vector<GroupRecord> groups(2);
  for (auto& rec : groups) rec.trajectories = {testing::void_sample(), testing::void_sample()};
  auto scores = score_step(groups, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank});
  EXPECT_EQ(scores.n_samples, 0);
  EXPECT_TRUE(std::isnan(scores.pass_turn1));
  EXPECT_TRUE(std::isnan(scores.pass_final));
  groups[1].trajectories[0] = {{{Verdict::kOk, std::nullopt, 100}}};
  scores = score_step(groups, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank});
  EXPECT_EQ(scores.pass_turn1, 1.0);
}

// A group whose turn-1 prompt did not fit has samples with no turn: they count neither way in
// the pass rates (as in DCP, and as `leap analyze` sees it: such a sample has no /samples row).
TEST(StepScores, SamplesWithNoTurnAreNotFailures) {
  std::vector<GroupRecord> groups(2);
  groups[0].trajectories = {Trajectory{}, Trajectory{}};
  groups[1].trajectories = {{{{Verdict::kOk, std::nullopt, 100}}}, {{{Verdict::kWrongAnswer, std::nullopt, 100}}}};
  auto scores = score_step(groups, {.mode = RewardMode::kRank}, {.mode = RewardMode::kRank});
  EXPECT_EQ(scores.n_samples, 2);
  EXPECT_EQ(scores.pass_turn1, 0.5);
  EXPECT_EQ(scores.pass_final, 0.5);
  EXPECT_TRUE(scores.groups[0].skip);
}

TEST(DescribeResult, NamesTheVerdictAndKeepsTheSandboxText) {
  sandbox::VerifyResult r{
      .verdict = Verdict::kWrongAnswer, .max_abs_err = 0.25, .feedback = "out[7]: 1 vs 2"};
  EXPECT_EQ(describe_result(r), "Verdict: WRONG_ANSWER (max abs error 0.25)\nout[7]: 1 vs 2");
  r = {.verdict = Verdict::kOk, .speedup = 1.5};
  EXPECT_EQ(describe_result(r), "Verdict: OK (speedup over the reference 1.50x)\n");
}

}  // namespace
}  // namespace leap::rl
