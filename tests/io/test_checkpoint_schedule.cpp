// The checkpoint rule with a hand-moved clock: steps, minutes, the last step, and the time rule
// counting from the latest checkpoint, not from the start.
#include <gtest/gtest.h>

#include <vector>

#include "io/checkpoint_schedule.h"

namespace leap::io {
namespace {

TEST(CheckpointSchedule, EveryNSteps) {
  double t = 0;
  CheckpointSchedule s(3, 0, [&] { return t; });
  std::vector<int64_t> due;
  for (int64_t step = 0; step < 10; ++step)
    if (s.due(step, step == 9)) due.push_back(step);
  EXPECT_EQ(due, (std::vector<int64_t>{2, 5, 8, 9}));
}

TEST(CheckpointSchedule, NeitherRuleMeansOnlyTheLastStep) {
  double t = 0;
  CheckpointSchedule s(0, 0, [&] { return t; });
  t = 1e9;
  EXPECT_FALSE(s.due(0, false));
  EXPECT_FALSE(s.due(41, false));
  EXPECT_TRUE(s.due(42, true));
}

TEST(CheckpointSchedule, MinutesSinceStartThenSinceLastSave) {
  double t = 100;  // the clock's origin is arbitrary
  CheckpointSchedule s(0, 2.0, [&] { return t; });
  t = 100 + 119;
  EXPECT_FALSE(s.due(0, false));
  t = 100 + 120;
  EXPECT_TRUE(s.due(1, false));
  s.saved();
  t = 100 + 120 + 60;
  EXPECT_FALSE(s.due(2, false)) << "the time rule restarts at the latest checkpoint";
  t = 100 + 120 + 121;
  EXPECT_TRUE(s.due(3, false));
}

TEST(CheckpointSchedule, StepsAndMinutesWhicheverComesFirst) {
  double t = 0;
  CheckpointSchedule s(10, 1.0, [&] { return t; });
  t = 30;
  EXPECT_FALSE(s.due(4, false));
  EXPECT_TRUE(s.due(9, false));  // the step rule, before a minute has passed
  s.saved();
  t = 30 + 61;
  EXPECT_TRUE(s.due(12, false));  // the time rule, between two step multiples
}

}  // namespace
}  // namespace leap::io
