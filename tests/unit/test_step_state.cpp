// One RL step's bookkeeping on the coordinator, driven by hand-made completions and verdicts:
// DCP decides groups as its rule says, only failed samples of expanded groups get more turns,
// samples stop at their first OK, advantages reach every turn, and HDF5 rows match.
#include <gtest/gtest.h>

#include "model/byte_tokenizer.h"
#include "mpi/step_state.h"

namespace leap::mpi {
namespace {

using sandbox::Verdict;

tasks::Suite tiny_suite() {
  std::string line =
      R"({"id": "L1/copy", "level": 1, "family": "elementwise", "prompt": "Copy a to out.",)"
      R"( "params": {"n": 1000}, "cpu_params": {"n": 37},)"
      R"( "buffers": [{"name": "a", "dtype": "f32", "shape": ["n"], "role": "in", "init": "normal"},)"
      R"( {"name": "out", "dtype": "f32", "shape": ["n"], "role": "out"}],)"
      R"( "reference": "```cuda\n__global__ void k(const float* a, float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = a[i]; }\n// launch: k<<<cdiv(n, 128), 128>>>(a, out, n)\n```",)"
      R"( "atol": 0, "rtol": 0, "split": "train"})";
  std::string text = line + "\n" + std::string(line).replace(line.find("L1/copy"), 7, "L1/cop2") + "\n";
  auto suite = tasks::parse_suite(text, "tiny.jsonl");
  EXPECT_TRUE(suite.has_value()) << suite.status().message();
  return *suite;
}

// Answers every item of the turn; `ok(group, sample, turn)` decides the verdict.
template <class F>
void run_turn(StepState& st, int turn, const tasks::Suite& suite, const rl::PromptBuilder& pb, F ok) {
  auto items = *st.make_turn(turn, suite, pb);
  std::vector<Completion> comps;
  for (const auto& it : items) comps.push_back({it.uid, "answer", {1, 2}, std::vector<int32_t>(static_cast<size_t>(3 + turn), 7), {-1, -1, -1}});
  ASSERT_TRUE(st.add_completions(comps, 0).is_ok());
  auto jobs = st.sandbox_jobs();
  ASSERT_EQ(jobs.size(), items.size());
  std::vector<SandboxOutcome> outs;
  for (const auto& j : jobs) {
    int g = static_cast<int>(j.uid >> 24), s = static_cast<int>((j.uid >> 8) & 0xffff);
    Verdict v = ok(g, s, turn) ? Verdict::kOk : Verdict::kWrongAnswer;
    outs.push_back({j.uid, static_cast<int32_t>(v), 0, 1, 1, -1, ok(g, s, turn) ? "" : "max error 1 at index 0"});
  }
  ASSERT_TRUE(st.add_outcomes(outs).is_ok());
}

TEST(StepState, StaticDcpExpandsOnlyHardGroupsAndStopsAtSuccess) {
  auto suite = tiny_suite();
  model::ByteTokenizer tok;
  auto format = *rl::make_prompt_format("plain", "", tok, {}, rl::MultiTurn::kAppend, 0);
  rl::PromptBuilder pb(rl::PromptOptions{}, format);
  StepOptions so{.group_size = 4, .max_turns = 3, .seed = 1};
  StepState st(0, {0, 1, 0}, so);
  // Group 0: 1 of 4 fails -> easy. Group 1: 2 of 4 fail -> expanded. Group 2: all fail -> hopeless.
  auto ok = [](int g, int s, int turn) {
    if (g == 0) return s != 3;
    if (g == 1) return s < 2 || (s == 2 && turn == 2);  // sample 2 fixes it in turn 2, sample 3 never
    return false;
  };
  run_turn(st, 1, suite, pb, ok);
  rl::DcpController dcp(rl::DcpOptions{});
  st.apply_dcp(dcp);
  EXPECT_EQ(st.groups()[0].dcp.label, rl::DcpLabel::kEasy);
  EXPECT_EQ(st.groups()[1].dcp.label, rl::DcpLabel::kExpanded);
  EXPECT_EQ(st.groups()[2].dcp.label, rl::DcpLabel::kHopeless);

  auto items2 = *st.make_turn(2, suite, pb);
  ASSERT_EQ(items2.size(), 2u);  // the two failed samples of group 1
  EXPECT_EQ(items2[0].uid, StepState::make_uid(1, 2, 2));
  EXPECT_NE(tok.decode(items2[0].prompt_ids).find("max error 1 at index 0"), std::string::npos);  // feedback shown
  EXPECT_NE(items2[0].seed, items2[1].seed);
  // Complete turn 2 through the same path.
  std::vector<Completion> comps;
  for (const auto& it : items2) comps.push_back({it.uid, "answer 2", {1}, {5, 5}, {-1, -1}});
  ASSERT_TRUE(st.add_completions(comps, 1).is_ok());
  std::vector<SandboxOutcome> outs;
  for (const auto& j : st.sandbox_jobs()) {
    int s = static_cast<int>((j.uid >> 8) & 0xffff);
    outs.push_back({j.uid, static_cast<int32_t>(s == 2 ? Verdict::kOk : Verdict::kCompileError), 0, 1, 1, -1, "e"});
  }
  ASSERT_TRUE(st.add_outcomes(outs).is_ok());
  st.close_turn(2);
  auto items3 = *st.make_turn(3, suite, pb);
  ASSERT_EQ(items3.size(), 1u);  // only sample 3 of group 1 is left
  EXPECT_EQ(items3[0].uid, StepState::make_uid(1, 3, 3));
  ASSERT_TRUE(st.add_completions({{items3[0].uid, "answer 3", {1}, {5}, {-1}}}, 0).is_ok());
  ASSERT_TRUE(st.add_outcomes({{items3[0].uid, static_cast<int32_t>(Verdict::kWrongAnswer), 0, 1, 1, -1, "x"}}).is_ok());
  st.close_turn(3);
  EXPECT_FALSE(st.any_active());

  st.score(rl::RewardOptions{}, rl::AdvantageOptions{});
  // Hopeless group: all fail alike -> all-zero advantages, skipped.
  EXPECT_TRUE(st.groups()[2].advantages.skip);
  // Expanded group: turn-1 successes beat the turn-2 success, which beats the failure.
  const auto& r1 = st.groups()[1].advantages.rewards;
  EXPECT_GT(r1[0], r1[2]);
  EXPECT_GT(r1[2], r1[3]);
  for (const auto& item : st.train_items()) EXPECT_NE(item.group, 2);

  io::StepRow row;
  std::vector<io::SampleRow> rows;
  std::vector<io::SampleText> texts;
  st.fill_rows(&row, &rows, &texts);
  EXPECT_EQ(row.n_groups, 3);
  EXPECT_EQ(row.n_easy, 1);
  EXPECT_EQ(row.n_hopeless, 1);
  EXPECT_EQ(row.n_expanded, 1);
  EXPECT_EQ(row.n_samples, 12 + 2 + 1);
  EXPECT_EQ(rows.size(), 15u);
  EXPECT_EQ(texts.size(), 15u);
  EXPECT_EQ(row.n_sandbox_jobs, 15);
  EXPECT_DOUBLE_EQ(row.pass_turn1, 5.0 / 12.0);  // 3 in group 0, 2 in group 1
  EXPECT_DOUBLE_EQ(row.pass_final, 6.0 / 12.0);
  EXPECT_EQ(row.n_dropped_groups, 1);
}

// A debugging turn whose verdict is still SANDBOX_ERROR after the retries makes the sample void,
// as at turn 1: it gets no further turn (whose feedback would be the infrastructure's error), and
// it plays no match and trains nothing.
TEST(StepState, ASandboxErrorAtALaterTurnEndsTheSampleVoid) {
  auto suite = tiny_suite();
  model::ByteTokenizer tok;
  auto format = *rl::make_prompt_format("plain", "", tok, {}, rl::MultiTurn::kAppend, 0);
  rl::PromptBuilder pb(rl::PromptOptions{}, format);
  StepOptions so{.group_size = 4, .max_turns = 3, .seed = 1};
  StepState st(0, {0}, so);
  run_turn(st, 1, suite, pb, [](int, int s, int) { return s < 2; });  // 2 of 4 fail: expanded
  rl::DcpController dcp(rl::DcpOptions{});
  st.apply_dcp(dcp);
  ASSERT_EQ(st.groups()[0].dcp.label, rl::DcpLabel::kExpanded);
  auto items2 = *st.make_turn(2, suite, pb);
  ASSERT_EQ(items2.size(), 2u);
  std::vector<Completion> comps;
  for (const auto& it : items2) comps.push_back({it.uid, "answer 2", {1}, {5, 5}, {-1, -1}});
  ASSERT_TRUE(st.add_completions(comps, 0).is_ok());
  // Sample 2's turn 2 never got a verdict; sample 3's was wrong.
  ASSERT_TRUE(st.add_outcomes({{StepState::make_uid(0, 2, 2), static_cast<int32_t>(Verdict::kSandboxError), 0, 1, 1, -1, "lost"},
                               {StepState::make_uid(0, 3, 2), static_cast<int32_t>(Verdict::kWrongAnswer), 0, 1, 1, -1, "x"}})
                  .is_ok());
  st.close_turn(2);
  auto items3 = *st.make_turn(3, suite, pb);
  ASSERT_EQ(items3.size(), 1u);
  EXPECT_EQ(items3[0].uid, StepState::make_uid(0, 3, 3));
  ASSERT_TRUE(st.add_completions({{items3[0].uid, "answer 3", {1}, {5}, {-1}}}, 0).is_ok());
  ASSERT_TRUE(st.add_outcomes({{items3[0].uid, static_cast<int32_t>(Verdict::kOk), 0, 1, 1, -1, ""}}).is_ok());
  st.close_turn(3);
  EXPECT_FALSE(st.any_active());
  st.score(rl::RewardOptions{}, rl::AdvantageOptions{});
  const auto& adv = st.groups()[0].advantages;
  EXPECT_EQ(adv.rewards[2], 0.0) << "a void sample gets reward 0";
  for (const auto& item : st.train_items()) EXPECT_NE(item.sample, 2) << "a void sample trains nothing";
}

TEST(StepState, SingleTurnNeverExpands) {
  auto suite = tiny_suite();
  model::ByteTokenizer tok;
  auto format = *rl::make_prompt_format("plain", "", tok, {}, rl::MultiTurn::kAppend, 0);
  rl::PromptBuilder pb(rl::PromptOptions{}, format);
  StepState st(3, {0}, StepOptions{.group_size = 2, .max_turns = 1, .seed = 1});
  run_turn(st, 1, suite, pb, [](int, int s, int) { return s == 0; });
  rl::DcpOptions o;
  o.max_turns = 1;
  st.apply_dcp(rl::DcpController(o));
  EXPECT_FALSE(st.any_active());
  EXPECT_TRUE(st.make_turn(2, suite, pb)->empty());
}

// The streaming pipeline's early turn 2: verdicts arrive one by one; once those in force DCP to
// expand the group, its failed samples may start turn 2 (one even finishes it) before the last
// turn-1 verdict, and DCP, deciding on turn 1 alone, then agrees.
// One group of 4 samples whose turn 1 is generated; its verdicts come in one by one, as they
// do in the streaming pipeline. DCP's defaults: easy below 2 failures of 4, hopeless at 4.
class OneGroupStep : public ::testing::Test {
 protected:
  void SetUp() override {
    items = *st.make_turn(1, suite, pb);
    ASSERT_EQ(items.size(), 4u);
    std::vector<Completion> comps;
    for (const auto& it : items) comps.push_back({it.uid, "answer", {1, 2}, {7, 7, 7}, {-1, -1, -1}});
    ASSERT_TRUE(st.add_completions(comps, 0).is_ok());
  }
  void verdict(int64_t uid, bool ok) {
    const Verdict v = ok ? Verdict::kOk : Verdict::kWrongAnswer;
    ASSERT_TRUE(st.add_outcomes({{uid, static_cast<int32_t>(v), 0, 1, 1, -1, ok ? "" : "max error 1 at index 0"}}).is_ok());
  }
  tasks::Suite suite = tiny_suite();
  model::ByteTokenizer tok;
  rl::PromptFormat format = *rl::make_prompt_format("plain", "", tok, {}, rl::MultiTurn::kAppend, 0);
  rl::PromptBuilder pb{rl::PromptOptions{}, format};
  StepState st{0, {0}, StepOptions{.group_size = 4, .max_turns = 3, .seed = 1}};
  const rl::DcpController dcp{rl::DcpOptions{}};
  std::vector<RolloutItem> items;
};

TEST_F(OneGroupStep, EarlyTurnTwoOnceExpansionIsForced) {
  verdict(items[0].uid, true);
  verdict(items[1].uid, false);
  EXPECT_TRUE(st.early_turn2(0, dcp).empty()) << "1 of 2 failed: the other two could make it easy";
  verdict(items[2].uid, false);
  EXPECT_EQ(st.early_turn2(0, dcp), (std::vector<int>{1, 2})) << "2 of 3 failed: expanded whatever sample 3 says";
  EXPECT_FALSE(st.turn1_verified(0));
  // Sample 1 runs turn 2 and passes it before sample 3's turn-1 verdict.
  auto t2 = *st.make_sample_turn(0, 1, 2, suite, pb);
  ASSERT_TRUE(t2.has_value());
  ASSERT_TRUE(st.add_completions({{t2->uid, "fixed", {1, 2}, {7, 7}, {-1, -1}}}, 0).is_ok());
  verdict(t2->uid, true);
  st.close_sample_turn(0, 1, 2);
  EXPECT_EQ(st.early_turn2(0, dcp), (std::vector<int>{2})) << "sample 1 has its turn 2";
  verdict(items[3].uid, false);
  ASSERT_TRUE(st.turn1_verified(0));
  st.apply_dcp_to_group(0, dcp);
  const auto& g = st.groups()[0];
  EXPECT_EQ(g.dcp.label, rl::DcpLabel::kExpanded);
  EXPECT_EQ(g.dcp.n_fail, 3);  // turn 1 alone: sample 1's passing turn 2 does not count here
  EXPECT_FALSE(g.samples[0].active);
  EXPECT_FALSE(g.samples[1].active);  // done at turn 2
  EXPECT_TRUE(g.samples[2].active);
  EXPECT_TRUE(g.samples[3].active);
}

// Speculative turn 2 (rl.speculative_turns): while the verdicts in leave DCP's decision open,
// the failed samples are candidates; a turn made for one and then retracted leaves the sample as
// it was, and once expansion is forced there is nothing to speculate on.
TEST_F(OneGroupStep, SpeculativeTurnTwoWhileTheDecisionIsOpen) {
  EXPECT_TRUE(st.speculative_turn2(0, dcp).empty()) << "no verdict in: no failed sample";
  verdict(items[1].uid, false);
  EXPECT_EQ(st.speculative_turn2(0, dcp), (std::vector<int>{1})) << "1 of 1 failed: easy, expanded or hopeless yet";
  EXPECT_FALSE(st.expansion_forced(0, dcp));
  // Its turn 2 is made, then taken back (as when DCP does not keep it): the sample is as before.
  const auto before = st.groups()[0].samples[1].turns.size();
  auto t2 = *st.make_sample_turn(0, 1, 2, suite, pb);
  ASSERT_TRUE(t2.has_value());
  EXPECT_TRUE(st.speculative_turn2(0, dcp).empty()) << "sample 1 has its turn 2";
  st.retract_turn(0, 1, 2);
  EXPECT_EQ(st.groups()[0].samples[1].turns.size(), before);
  EXPECT_EQ(st.speculative_turn2(0, dcp), (std::vector<int>{1}));
  // The same seed makes the same turn again: a kept speculative turn is the decision's.
  auto again = *st.make_sample_turn(0, 1, 2, suite, pb);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->uid, t2->uid);
  EXPECT_EQ(again->seed, t2->seed);
  EXPECT_EQ(again->prompt_ids, t2->prompt_ids);
  st.retract_turn(0, 1, 2);
  verdict(items[2].uid, false);
  EXPECT_EQ(st.speculative_turn2(0, dcp), (std::vector<int>{1, 2})) << "2 of 2 failed: expanded or hopeless yet";
  verdict(items[0].uid, true);
  EXPECT_TRUE(st.expansion_forced(0, dcp)) << "2 of 3 failed: expanded whatever sample 3 says";
  EXPECT_TRUE(st.speculative_turn2(0, dcp).empty()) << "forced: early_turn2's, not speculative";
  EXPECT_EQ(st.early_turn2(0, dcp), (std::vector<int>{1, 2}));
  verdict(items[3].uid, false);
  EXPECT_TRUE(st.speculative_turn2(0, dcp).empty()) << "every verdict in: the decision is made";
}

TEST(StepState, ResampledRoundLeavesEarlierGroupsAlone) {
  auto suite = tiny_suite();
  model::ByteTokenizer tok;
  auto format = *rl::make_prompt_format("plain", "", tok, {}, rl::MultiTurn::kAppend, 0);
  rl::PromptBuilder pb(rl::PromptOptions{}, format);
  StepState st(0, {0, 1}, StepOptions{.group_size = 4, .max_turns = 2, .seed = 1});
  // Round 1: group 0 all pass (nothing to learn), group 1 half pass (expanded).
  auto ok = [](int g, int s, int) { return g == 0 || g == 2 ? true : (g == 1 ? s < 2 : s == 0); };
  rl::DcpController dcp(rl::DcpOptions{.max_turns = 2});
  run_turn(st, 1, suite, pb, ok);
  st.apply_dcp(dcp);
  run_turn(st, 2, suite, pb, ok);
  st.close_turn(2);
  st.score({}, {});
  EXPECT_EQ(st.zero_variance_groups_of_round(), 1);
  const auto dcp_before = st.groups()[1].dcp.label;
  // Round 2: two fresh groups; only they get turns, and DCP decides only them.
  st.add_groups({1, 0});
  EXPECT_EQ(st.groups().size(), 4u);
  run_turn(st, 1, suite, pb, ok);  // turn 1 of the new groups only
  st.apply_dcp(dcp);
  for (size_t g = 2; g < 4; ++g)
    for (const auto& sample : st.groups()[g].samples) EXPECT_EQ(sample.turns.size(), 1u);
  EXPECT_EQ(st.groups()[0].samples[0].turns.size(), 1u);
  EXPECT_EQ(st.groups()[1].dcp.label, dcp_before);
  EXPECT_EQ(st.groups()[1].samples[3].turns.size(), 2u);  // its turn 2 is kept
  st.score({}, {});
  EXPECT_EQ(st.zero_variance_groups_of_round(), 1);  // group 2: all pass
  io::StepRow row;
  std::vector<io::SampleRow> rows;
  std::vector<io::SampleText> texts;
  st.fill_rows(&row, &rows, &texts);
  EXPECT_EQ(row.n_groups, 4);
}

TEST(StepState, UnknownUidIsAnError) {
  StepState st(0, {0}, StepOptions{.group_size = 2, .max_turns = 1, .seed = 1});
  EXPECT_FALSE(st.add_completions({{StepState::make_uid(5, 0, 1), "", {}, {}, {}}}, 0).is_ok());
  EXPECT_FALSE(st.add_outcomes({{StepState::make_uid(0, 0, 1), 0, 0, 0, 0, -1, ""}}).is_ok());  // no turn yet
}

}  // namespace
}  // namespace leap::mpi
