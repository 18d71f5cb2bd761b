// DCP: the static thresholds for every failure count of G = 8, threshold rounding, off mode,
// single-turn, void samples, who continues, per-step statistics, the adaptive controller (dead
// band, direction, clipping, convergence without oscillation) and its checkpoint state.
#include <gtest/gtest.h>

#include <vector>

#include "rl/dcp.h"
#include "rl_test_util.h"

namespace leap::rl {
namespace {

using namespace leap::rl::testing;

// Turn-1 group of G samples, the first n_fail of them failed.
std::vector<Trajectory> turn1_group(int g, int n_fail) {
  std::vector<Trajectory> out;
  for (int i = 0; i < g; ++i) out.push_back(i < n_fail ? failure(1) : success_at(1));
  return out;
}

TEST(Dcp, StaticDefaultsForEveryFailureCount) {
  DcpController dcp({.mode = DcpMode::kStatic});
  const DcpLabel want[9] = {DcpLabel::kEasy,     DcpLabel::kEasy,     DcpLabel::kEasy,
                            DcpLabel::kEasy,     DcpLabel::kExpanded, DcpLabel::kExpanded,
                            DcpLabel::kExpanded, DcpLabel::kExpanded, DcpLabel::kHopeless};
  for (int n_fail = 0; n_fail <= 8; ++n_fail) {
    auto d = dcp.decide(turn1_group(8, n_fail));
    EXPECT_EQ(d.label, want[n_fail]) << n_fail << " failures: " << d.reason;
    EXPECT_EQ(d.n_fail, n_fail);
    EXPECT_EQ(d.n_valid, 8);
    EXPECT_FALSE(d.reason.empty());
  }
}

TEST(Dcp, ThresholdProductsRoundAsWritten) {
  // 0.28 * 25 is 7.000000000000001 and 0.56 * 25 is 14.000000000000002 in floating point:
  // 7 failures are not "fewer than 7", and 14 are "at least 14".
  DcpController dcp({.mode = DcpMode::kStatic, .easy_below = 0.28, .hopeless_at = 0.56});
  EXPECT_EQ(dcp.decide(turn1_group(25, 6)).label, DcpLabel::kEasy);
  EXPECT_EQ(dcp.decide(turn1_group(25, 7)).label, DcpLabel::kExpanded);
  EXPECT_EQ(dcp.decide(turn1_group(25, 13)).label, DcpLabel::kExpanded);
  EXPECT_EQ(dcp.decide(turn1_group(25, 14)).label, DcpLabel::kHopeless);
}

TEST(Dcp, OffExpandsEveryGroupWithAFailure) {
  DcpController dcp({.mode = DcpMode::kOff});
  EXPECT_EQ(dcp.decide(turn1_group(8, 0)).label, DcpLabel::kEasy);
  for (int n_fail = 1; n_fail <= 8; ++n_fail)
    EXPECT_EQ(dcp.decide(turn1_group(8, n_fail)).label, DcpLabel::kExpanded) << n_fail;
}

TEST(Dcp, SingleTurnLabelsNone) {
  DcpController dcp({.mode = DcpMode::kStatic, .max_turns = 1});
  auto d = dcp.decide(turn1_group(8, 5));
  EXPECT_EQ(d.label, DcpLabel::kNone);
  EXPECT_TRUE(dcp.continuing_samples(d, turn1_group(8, 5)).empty());
}

TEST(Dcp, VoidSamplesCountNeitherWay) {
  auto g = turn1_group(6, 6);
  g.push_back(void_sample());
  g.push_back(void_sample());
  DcpController dcp({.mode = DcpMode::kStatic});
  auto d = dcp.decide(g);
  EXPECT_EQ(d.label, DcpLabel::kHopeless);  // 6 of 6 valid samples failed
  EXPECT_EQ(d.n_valid, 6);
  EXPECT_EQ(d.group_size, 8);
}

// Hand-worked cases of an early decision (the streaming pipeline starts turn 2 then), G = 8.
TEST(Dcp, ExpansionForcedBeforeEveryVerdictIsIn) {
  DcpController dcp({.mode = DcpMode::kStatic});  // easy below 4 failures of 8, hopeless at 8
  EXPECT_TRUE(dcp.expansion_forced(4, 5, 3));    // 1 pass, 4 failures: 4..7 of 5..8 expand
  EXPECT_FALSE(dcp.expansion_forced(3, 4, 4));   // 4 more passes: 3 of 8 is easy
  EXPECT_FALSE(dcp.expansion_forced(4, 4, 4));   // 4 more failures: hopeless
  EXPECT_FALSE(dcp.expansion_forced(0, 0, 8));
  EXPECT_TRUE(dcp.expansion_forced(4, 8, 0));    // everything in: the decision itself
  EXPECT_TRUE(dcp.expansion_possible(3, 4, 4));  // not forced, but one more failure expands it
  EXPECT_TRUE(dcp.expansion_possible(7, 7, 1));  // hopeless unless the last one passes
  EXPECT_FALSE(dcp.expansion_possible(8, 8, 0)); // everything in, every one failed: hopeless
  EXPECT_FALSE(dcp.expansion_possible(0, 7, 1)); // at most 1 failure of 8: easy
  DcpController off({.mode = DcpMode::kOff});
  EXPECT_TRUE(off.expansion_forced(1, 1, 7));    // off expands any group with a failure
  EXPECT_FALSE(off.expansion_forced(0, 1, 7));
  DcpController single({.mode = DcpMode::kStatic, .max_turns = 1});
  EXPECT_FALSE(single.expansion_forced(4, 5, 3));
}

// expansion_forced and expansion_possible against decide() on every way the pending samples can
// end (pass, fail or void), for every tally of a group of 6, in three modes.
TEST(Dcp, ExpansionForcedMeansEveryOutcomeExpands) {
  const std::vector<DcpController> modes = {DcpController({.mode = DcpMode::kStatic}),
                                            DcpController({.mode = DcpMode::kStatic, .easy_below = 0.3, .hopeless_at = 0.7}),
                                            DcpController({.mode = DcpMode::kOff})};
  const int G = 6;
  int forced_seen = 0, open_seen = 0;
  for (const auto& dcp : modes)
    for (int known = 0; known <= G; ++known)
      for (int n_void = 0; n_void <= known; ++n_void)
        for (int n_fail = 0; n_fail + n_void <= known; ++n_fail) {
          const int pending = G - known;
          std::vector<Trajectory> base;
          for (int i = 0; i < n_fail; ++i) base.push_back(failure(1));
          for (int i = 0; i < n_void; ++i) base.push_back(void_sample());
          for (int i = n_fail + n_void; i < known; ++i) base.push_back(success_at(1));
          bool all_expand = true, some_expand = false;
          int combos = 1;
          for (int i = 0; i < pending; ++i) combos *= 3;
          for (int c = 0; c < combos; ++c) {
            auto g = base;
            for (int i = 0, code = c; i < pending; ++i, code /= 3)
              g.push_back(code % 3 == 0 ? success_at(1) : code % 3 == 1 ? failure(1) : void_sample());
            const bool expands = dcp.decide(g).label == DcpLabel::kExpanded;
            all_expand = all_expand && expands;
            some_expand = some_expand || expands;
          }
          EXPECT_EQ(dcp.expansion_forced(n_fail, known - n_void, pending), all_expand)
              << n_fail << " failed, " << known - n_void << " valid, " << pending << " pending";
          EXPECT_EQ(dcp.expansion_possible(n_fail, known - n_void, pending), some_expand)
              << n_fail << " failed, " << known - n_void << " valid, " << pending << " pending";
          forced_seen += all_expand && pending > 0;
          open_seen += some_expand && !all_expand;
        }
  EXPECT_GT(forced_seen, 10);  // the early case is not empty
  EXPECT_GT(open_seen, 10);    // nor is the speculative one
}

TEST(Dcp, OnlyFailedSamplesOfExpandedGroupsContinueUntilSuccessOrMaxTurns) {
  DcpController dcp({.mode = DcpMode::kStatic, .max_turns = 3});
  auto g = turn1_group(8, 5);
  g[7] = void_sample();  // a success replaced: 5 of 7 valid failed
  auto d = dcp.decide(g);
  ASSERT_EQ(d.label, DcpLabel::kExpanded);
  EXPECT_EQ(dcp.continuing_samples(d, g), (std::vector<size_t>{0, 1, 2, 3, 4}));
  // Turn 2: sample 0 succeeds and stops; the others go on to turn 3 and stop there.
  g[0] = success_at(2);
  for (int i = 1; i < 5; ++i) g[i] = failure(2);
  EXPECT_EQ(dcp.continuing_samples(d, g), (std::vector<size_t>{1, 2, 3, 4}));
  for (int i = 1; i < 5; ++i) g[i] = failure(3);
  EXPECT_TRUE(dcp.continuing_samples(d, g).empty());
  // Easy and hopeless groups never continue.
  for (int n_fail : {2, 8}) {
    auto h = turn1_group(8, n_fail);
    EXPECT_TRUE(dcp.continuing_samples(dcp.decide(h), h).empty()) << n_fail;
  }
}

TEST(Dcp, StepStatistics) {
  DcpController dcp({.mode = DcpMode::kStatic, .max_turns = 2});
  DcpStepStats st;
  auto easy = turn1_group(4, 1);
  st.add_group(dcp.decide(easy), easy);
  auto hopeless = turn1_group(4, 4);
  st.add_group(dcp.decide(hopeless), hopeless);
  auto hard = turn1_group(4, 3);
  auto d = dcp.decide(hard);
  for (size_t i : dcp.continuing_samples(d, hard)) hard[i] = i == 0 ? success_at(2) : failure(2);
  st.add_group(d, hard);
  EXPECT_EQ(st.n_groups, 3);
  EXPECT_EQ(st.n_easy, 1);
  EXPECT_EQ(st.n_hopeless, 1);
  EXPECT_EQ(st.n_expanded, 1);
  EXPECT_EQ(st.samples_expanded, 3);
  EXPECT_EQ(st.sandbox_jobs, 4 + 4 + 4 + 3);
}

// ---- adaptive ------------------------------------------------------------------------------

DcpStepStats with_expanded(int64_t samples) {
  DcpStepStats s;
  s.samples_expanded = samples;
  return s;
}

TEST(DcpAdaptive, DeadBandHoldsAndErrorsMoveByTheStep) {
  DcpController dcp({.mode = DcpMode::kAdaptive, .easy_below = 0.5, .budget = 100});
  dcp.update(with_expanded(109));  // +9%: inside the 10% band
  EXPECT_EQ(dcp.easy_below(), 0.5);
  dcp.update(with_expanded(91));
  EXPECT_EQ(dcp.easy_below(), 0.5);
  dcp.update(with_expanded(150));  // +50% -> +0.1 * 0.5: more groups become easy
  EXPECT_NEAR(dcp.easy_below(), 0.55, 1e-12);
  dcp.update(with_expanded(50));  // -50% -> back
  EXPECT_NEAR(dcp.easy_below(), 0.5, 1e-12);
  EXPECT_EQ(dcp.updates(), 4);
}

TEST(DcpAdaptive, ClippedToTheUsefulRange) {
  DcpController dcp({.mode = DcpMode::kAdaptive,
                     .easy_below = 0.9,
                     .hopeless_at = 0.95,
                     .budget = 10,
                     .adaptive_step = 1.0});
  dcp.update(with_expanded(1000));
  EXPECT_EQ(dcp.easy_below(), 0.95);  // beyond hopeless_at it would change no decision
  for (int i = 0; i < 3; ++i) dcp.update(with_expanded(0));
  EXPECT_EQ(dcp.easy_below(), 0.0);
}

TEST(DcpAdaptive, StaticModeNeverMoves) {
  DcpController dcp({.mode = DcpMode::kStatic, .budget = 10});
  dcp.update(with_expanded(1000));
  EXPECT_EQ(dcp.easy_below(), 0.5);
}

// A fixed population of 64 groups of 8: n groups with k failures, counts[k]. Each step decides
// every group, expands the failures of the expanded ones and feeds the count back. The expanded
// samples for threshold k (failures >= k expanded, 8 hopeless) are 196, 196, 188, 172, 148, 116,
// 76, 28 for k = 0..7: only the level 148 lies within 10% of a budget of 150.
std::vector<double> run_population(DcpController& dcp, int steps) {
  const int counts[9] = {8, 8, 8, 8, 8, 8, 8, 4, 4};
  std::vector<double> trace;
  for (int s = 0; s < steps; ++s) {
    DcpStepStats st;
    for (int k = 0; k <= 8; ++k)
      for (int n = 0; n < counts[k]; ++n) {
        auto g = turn1_group(8, k);
        auto d = dcp.decide(g);
        for (size_t i : dcp.continuing_samples(d, g)) g[i] = failure(2);
        st.add_group(d, g);
      }
    dcp.update(st);
    trace.push_back(dcp.easy_below());
  }
  return trace;
}

int direction_changes(const std::vector<double>& trace) {
  int changes = 0, last = 0;
  for (size_t i = 1; i < trace.size(); ++i) {
    const double d = trace[i] - trace[i - 1];
    const int dir = d > 0 ? 1 : (d < 0 ? -1 : 0);
    if (dir != 0 && last != 0 && dir != last) ++changes;
    if (dir != 0) last = dir;
  }
  return changes;
}

TEST(DcpAdaptive, ConvergesWithoutOscillationFromBothSides) {
  for (double start : {0.0, 1.0}) {
    DcpController dcp({.mode = DcpMode::kAdaptive, .easy_below = start, .budget = 150});
    auto trace = run_population(dcp, 80);
    // Settled: the last 40 steps never moved, and the threshold expands failures >= 4 only
    // (easy_below * 8 in (3, 4]).
    for (size_t i = 40; i < trace.size(); ++i) EXPECT_EQ(trace[i], trace[39]) << "start " << start;
    EXPECT_GT(trace.back() * 8, 3.0);
    EXPECT_LE(trace.back() * 8, 4.0);
    EXPECT_EQ(direction_changes(trace), 0) << "start " << start;
    EXPECT_LE(std::abs(dcp.last_error()), 0.1);
  }
}

TEST(DcpAdaptive, WithoutDeadBandItOscillates) {
  // Budget 160 lies between the levels 172 (+7.5%) and 148 (-7.5%): the default band holds
  // whichever it reaches first; with no band the threshold keeps crossing back and forth.
  DcpController banded({.mode = DcpMode::kAdaptive, .easy_below = 0.0, .budget = 160});
  auto settled = run_population(banded, 60);
  EXPECT_EQ(direction_changes(settled), 0);
  DcpController bare(
      {.mode = DcpMode::kAdaptive, .easy_below = 0.0, .budget = 160, .dead_band = 0.0});
  auto swinging = run_population(bare, 60);
  EXPECT_GE(direction_changes(swinging), 5);
}

TEST(DcpState, RoundTripsThroughJson) {
  DcpOptions opts{.mode = DcpMode::kAdaptive, .easy_below = 0.5, .budget = 100};
  DcpController a(opts);
  a.update(with_expanded(180));
  a.update(with_expanded(170));
  auto text = a.state_json().dump();
  DcpController b(opts);
  ASSERT_TRUE(b.load_state_json(nlohmann::json::parse(text)).is_ok());
  EXPECT_EQ(b.easy_below(), a.easy_below());
  EXPECT_EQ(b.updates(), 2);
  EXPECT_EQ(b.last_error(), a.last_error());
  // A run resumed in static mode keeps its configured threshold.
  DcpController s({.mode = DcpMode::kStatic, .easy_below = 0.25});
  ASSERT_TRUE(s.load_state_json(a.state_json()).is_ok());
  EXPECT_EQ(s.easy_below(), 0.25);
}

TEST(DcpState, RejectsBadState) {
  DcpController dcp({.mode = DcpMode::kAdaptive, .budget = 10});
  EXPECT_FALSE(dcp.load_state_json(nlohmann::json::array()).is_ok());
  EXPECT_FALSE(
      dcp.load_state_json({{"mode", "adaptive"}, {"easy_below", 2.0}, {"updates", 1}}).is_ok());
  EXPECT_FALSE(
      dcp.load_state_json({{"mode", "sometimes"}, {"easy_below", 0.5}, {"updates", 1}}).is_ok());
  EXPECT_FALSE(
      dcp.load_state_json({{"mode", "adaptive"}, {"easy_below", "half"}, {"updates", 1}}).is_ok());
  EXPECT_EQ(dcp.easy_below(), 0.5);
}

}  // namespace
}  // namespace leap::rl
