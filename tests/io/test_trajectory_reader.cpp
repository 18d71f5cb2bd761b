// The reader behind `leap analyze`, on files written by TrajectoryFile: every committed step and
// its samples come back as written, --last N keeps the last N steps and only their samples, a
// /steps row whose samples are not all in the file yet is left out as pending, and /steps and
// /samples that disagree are reported as damage, naming the row.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/trajectory_file.h"
#include "io/trajectory_reader.h"
#include "sandbox/verdict.h"

namespace leap::io {
namespace {

std::string fresh(const std::string& name) {
  std::string p = ::testing::TempDir() + name;
  std::filesystem::remove(p);
  return p;
}

// Step `s` with `rows` sample rows (turn 1, sample i, task i % 2) whose StepRow claims `claimed`.
void append(TrajectoryFile& f, int64_t s, int rows, int claimed,
            int8_t verdict = static_cast<int8_t>(sandbox::Verdict::kWrongAnswer), int32_t turn = 1) {
  StepRow st;
  st.step = s;
  st.time_s = 1.0 + static_cast<double>(s);
  st.n_groups = 1;  // a committed step has at least one group (io::step_row_committed)
  st.n_samples = claimed;
  std::vector<SampleRow> samples;
  std::vector<SampleText> texts;
  for (int i = 0; i < rows; ++i) {
    SampleRow r;
    r.step = s;
    r.task = i % 2;
    r.sample = i;
    r.turn = turn;
    r.completion_tokens = static_cast<int32_t>(10 * s + i);
    r.verdict = verdict;
    samples.push_back(r);
    texts.push_back({"p", "c", ""});
  }
  ASSERT_TRUE(f.append_step(st, samples, texts).is_ok());
}

Expected<std::unique_ptr<TrajectoryFile>> create(const std::string& path) {
  return TrajectoryFile::create(
      path, {"[rl]\nmax_turns = 2\n", "0.1.0", "abc", "fp", {"L1/a", "L1/b"}}, SwmrMode::kOff);
}

TEST(TrajectoryReader, ReadsEveryStepAndTheLastN) {
  const std::string path = fresh("reader_all.h5");
  {
    auto f = create(path);
    ASSERT_TRUE(f.has_value());
    for (int64_t s = 0; s < 3; ++s)
      append(**f, s, 2 + static_cast<int>(s), 2 + static_cast<int>(s));
  }
  auto all = read_trajectory_run(path);
  ASSERT_TRUE(all.has_value()) << all.status().message();
  EXPECT_EQ(all->steps.size(), 3u);
  EXPECT_EQ(all->samples.size(), 2u + 3u + 4u);
  EXPECT_EQ(all->steps_in_file, 3);
  EXPECT_EQ(all->rows_pending, 0);
  EXPECT_EQ(all->task_ids, (std::vector<std::string>{"L1/a", "L1/b"}));
  EXPECT_EQ(all->config_ini, "[rl]\nmax_turns = 2\n");
  EXPECT_EQ(all->schema_version, "7");
  EXPECT_EQ(all->samples[4].completion_tokens, 12);  // step 1, sample 2: rows 0-1 are step 0

  auto last = read_trajectory_run(path, 2);
  ASSERT_TRUE(last.has_value());
  ASSERT_EQ(last->steps.size(), 2u);
  EXPECT_EQ(last->steps[0].step, 1);
  EXPECT_EQ(last->steps_in_file, 3);
  ASSERT_EQ(last->samples.size(), 3u + 4u);
  EXPECT_EQ(last->samples.front().step, 1);
  EXPECT_EQ(last->samples.back().step, 2);
  EXPECT_DOUBLE_EQ(last->time_s_before, 1.0);  // step 0's time_s

  auto more = read_trajectory_run(path, 10);  // more than there are: all of them
  ASSERT_TRUE(more.has_value());
  EXPECT_EQ(more->steps.size(), 3u);
}

TEST(TrajectoryReader, AStepWhoseSamplesAreNotAllThereIsPending) {
  const std::string path = fresh("reader_pending.h5");
  {
    auto f = create(path);
    ASSERT_TRUE(f.has_value());
    append(**f, 0, 2, 2);
    append(**f, 1, 2, 5);  // claims 5 rows; only 2 follow it
  }
  auto run = read_trajectory_run(path);
  ASSERT_TRUE(run.has_value()) << run.status().message();
  EXPECT_EQ(run->steps.size(), 1u);
  EXPECT_EQ(run->rows_pending, 1);
  EXPECT_EQ(run->samples.size(), 2u);
}

TEST(TrajectoryReader, StepsAndSamplesThatDisagreeAreDamage) {
  const std::string path = fresh("reader_damaged.h5");
  {
    auto f = create(path);
    ASSERT_TRUE(f.has_value());
    append(**f, 0, 3, 2);  // claims 2 of its 3 rows: row 2 (step 0) lands in step 1's share
    append(**f, 1, 2, 2);
  }
  auto run = read_trajectory_run(path);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.status().exit_code(), 2);
  EXPECT_NE(run.status().message().find("/samples row 2 (step 0, where /steps says step 1)"),
            std::string::npos)
      << run.status().message();
  EXPECT_NE(run.status().message().find(path), std::string::npos);
}

// A verdict outside the enum (a damaged byte, or a file of a leap that knows more verdicts)
// indexes the summary's tables: it is damage, named, not a count written out of bounds.
TEST(TrajectoryReader, AVerdictOutsideTheEnumIsDamage) {
  const std::string path = fresh("reader_verdict.h5");
  {
    auto f = create(path);
    ASSERT_TRUE(f.has_value());
    append(**f, 0, 2, 2);
    append(**f, 1, 2, 2, /*verdict=*/12);
  }
  auto run = read_trajectory_run(path);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.status().exit_code(), 2);
  EXPECT_NE(run.status().message().find("/samples row 2 (verdict 12, not one of the"), std::string::npos)
      << run.status().message();
}

// A turn past rl.max_turns' bound: readers size per-turn tables by the deepest turn, and a
// damaged 2^31 - 1 would ask for gigabytes.
TEST(TrajectoryReader, ATurnPastTheBoundIsDamage) {
  const std::string path = fresh("reader_turn.h5");
  {
    auto f = create(path);
    ASSERT_TRUE(f.has_value());
    append(**f, 0, 2, 2);
    append(**f, 1, 2, 2, static_cast<int8_t>(sandbox::Verdict::kWrongAnswer), /*turn=*/2147483647);
  }
  auto run = read_trajectory_run(path);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.status().exit_code(), 2);
  EXPECT_NE(run.status().message().find("/samples row 2 (turn 2147483647)"), std::string::npos)
      << run.status().message();
}

TEST(TrajectoryReader, ARunFolderResolvesToItsFile) {
  const std::string dir = ::testing::TempDir() + "reader_run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto f = create(dir + "/trajectories.h5");
    ASSERT_TRUE(f.has_value());
    append(**f, 0, 1, 1);
  }
  auto run = read_trajectory_run(dir);
  ASSERT_TRUE(run.has_value()) << run.status().message();
  EXPECT_EQ(run->path, dir + "/trajectories.h5");
  EXPECT_EQ(run->steps.size(), 1u);
}

}  // namespace
}  // namespace leap::io
