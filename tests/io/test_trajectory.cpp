// Trajectory file: written here, read back by h5py through tools/leap_trajectories.py (the way
// users read it), including while the writer still holds it open (SWMR), after a resume that
// cuts rows, after a writer killed mid-run, and refusals of bad input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/trajectory_file.h"
#include "sandbox/verdict.h"

namespace leap::io {
namespace {

constexpr int kPerStep = 4;

TrajectoryMeta meta(const std::string& fp = "run-A") {
  return {"[rl]\ngroup_size = 4\n", "0.1.0", "abc123", fp, {"L1/task0", "L1/task1", "L1/task2"}, ""};
}
// The same run resumed by another build.
TrajectoryMeta resumed_meta() {
  TrajectoryMeta m = meta();
  m.git_commit = "def456";
  return m;
}

void append(TrajectoryFile& f, int64_t s) {
  StepRow row;
  row.step = s;
  row.pass_final = 0.5 + static_cast<double>(s);
  row.n_groups = 1;  // a committed step has at least one group (io::step_row_committed)
  row.n_samples = kPerStep;
  std::vector<SampleRow> samples;
  std::vector<SampleText> texts;
  for (int i = 0; i < kPerStep; ++i) {
    SampleRow r;
    r.step = s;
    r.task = i % 3;
    r.sample = i;
    r.turn = 1;
    r.verdict = static_cast<int8_t>(i == 0 ? sandbox::Verdict::kOk : sandbox::Verdict::kWrongAnswer);
    r.dcp = s % 2 ? DcpClass::kExpanded : DcpClass::kEasy;
    r.speedup = NAN;
    samples.push_back(r);
    texts.push_back({"prompt " + std::to_string(s) + "." + std::to_string(i),
                     "completion " + std::to_string(s) + "." + std::to_string(i) + " \xc3\xa9",
                     i % 2 ? "" : "feedback " + std::to_string(s) + "." + std::to_string(i)});
  }
  ASSERT_TRUE(f.append_step(row, samples, texts).is_ok());
}

int check_with_h5py(const std::string& path, int steps, const std::string& extra = "") {
  std::string cmd = "/usr/bin/python3 " LEAP_SOURCE_DIR "/tests/io/check_trajectory.py " + extra + " '" + path + "' " +
                    std::to_string(steps) + " " + std::to_string(kPerStep);
  return std::system(cmd.c_str());
}

std::string fresh(const std::string& name) {
  std::string p = ::testing::TempDir() + name;
  std::filesystem::remove(p);
  return p;
}

TEST(Trajectory, WriteReadBackAndReadWhileOpen) {
  auto path = fresh("t1.h5");
  auto f = TrajectoryFile::create(path, meta(), SwmrMode::kOn);
  ASSERT_TRUE(f.has_value()) << f.status().message();
  EXPECT_TRUE((*f)->swmr());
  append(**f, 0);
  append(**f, 1);
  // The writer is still open: a SWMR reader sees both steps.
  EXPECT_EQ(check_with_h5py(path, 2), 0);
  append(**f, 2);
  EXPECT_EQ(check_with_h5py(path, 3), 0);
  ASSERT_TRUE((*f)->close().is_ok());
  EXPECT_EQ(check_with_h5py(path, 3), 0);
}

TEST(Trajectory, ResumeCutsRowsPastTheCheckpoint) {
  auto path = fresh("t2.h5");
  {
    auto f = TrajectoryFile::create(path, meta(), SwmrMode::kOff);
    ASSERT_TRUE(f.has_value());
    for (int s = 0; s < 5; ++s) append(**f, s);
  }
  auto f = TrajectoryFile::resume(path, resumed_meta(), /*last_step=*/2, SwmrMode::kOn);
  ASSERT_TRUE(f.has_value()) << f.status().message();
  EXPECT_EQ((*f)->steps_written(), 3);
  EXPECT_EQ((*f)->samples_written(), 3 * kPerStep);
  append(**f, 3);  // the resumed run writes step 3 again: exactly once in the file
  ASSERT_TRUE((*f)->close().is_ok());
  EXPECT_EQ(check_with_h5py(path, 4, "--attempts=0:abc123,3:def456"), 0);
  // Resumed again from an earlier checkpoint: the start it cuts off (at step 3) is dropped.
  auto g = TrajectoryFile::resume(path, meta(), /*last_step=*/1, SwmrMode::kOff);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  append(**g, 2);
  ASSERT_TRUE((*g)->close().is_ok());
  EXPECT_EQ(check_with_h5py(path, 3, "--attempts=0:abc123,2:abc123"), 0);
}

TEST(Trajectory, ResumeAfterWriterWasKilled) {
  auto path = fresh("t3.h5");
  pid_t child = fork();  // this test process holds no MPI or CUDA state
  if (child == 0) {
    auto f = TrajectoryFile::create(path, meta(), SwmrMode::kOn);
    if (!f) _exit(3);
    for (int s = 0; s < 3; ++s) append(**f, s);
    raise(SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto f = TrajectoryFile::resume(path, meta(), /*last_step=*/1, SwmrMode::kOn);
  ASSERT_TRUE(f.has_value()) << f.status().message();
  append(**f, 2);
  ASSERT_TRUE((*f)->close().is_ok());
  EXPECT_EQ(check_with_h5py(path, 3, "--attempts=0:abc123,2:abc123"), 0);
}

TEST(Trajectory, RefusesBadInput) {
  auto path = fresh("t4.h5");
  {
    auto f = TrajectoryFile::create(path, meta(), SwmrMode::kOff);
    ASSERT_TRUE(f.has_value());
    append(**f, 0);
  }
  auto again = TrajectoryFile::create(path, meta(), SwmrMode::kOff);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.status().exit_code(), 2);

  auto other = TrajectoryFile::resume(path, meta("run-B"), 0, SwmrMode::kOff);
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.status().message().find("another run"), std::string::npos);
  EXPECT_EQ(other.status().exit_code(), 2);
  EXPECT_EQ(check_with_h5py(path, 1), 0);  // refused resumes leave the file as it was

  // A file that ends before the checkpoint's step (a crash lost its last rows): resuming would
  // leave a gap, so it is refused, naming the fix, and the file is left as it was.
  auto short_file = TrajectoryFile::resume(path, meta(), /*last_step=*/3, SwmrMode::kOff);
  ASSERT_FALSE(short_file.has_value());
  EXPECT_EQ(short_file.status().exit_code(), 2);
  EXPECT_NE(short_file.status().message().find("holds the steps up to 0, not up to the checkpoint's step 3"),
            std::string::npos)
      << short_file.status().message();
  EXPECT_FALSE(std::filesystem::exists(path + ".resume.tmp"));
  EXPECT_EQ(check_with_h5py(path, 1), 0);
  // Another suite (its task list differs): /samples' task column would name the wrong tasks.
  TrajectoryMeta edited = meta();
  edited.task_ids.push_back("L1/task3");
  auto other_suite = TrajectoryFile::resume(path, edited, 0, SwmrMode::kOff);
  ASSERT_FALSE(other_suite.has_value());
  EXPECT_EQ(other_suite.status().exit_code(), 2);
  EXPECT_NE(other_suite.status().message().find("the suite changed since the run started"), std::string::npos)
      << other_suite.status().message();
  EXPECT_EQ(check_with_h5py(path, 1), 0);
  // A checkpoint's sync: the rows are on disk, and appending goes on.
  auto synced = TrajectoryFile::resume(path, meta(), 0, SwmrMode::kOff);
  ASSERT_TRUE(synced.has_value()) << synced.status().message();
  append(**synced, 1);
  EXPECT_TRUE((*synced)->sync().is_ok());
  append(**synced, 2);
  ASSERT_TRUE((*synced)->close().is_ok());
  EXPECT_EQ(check_with_h5py(path, 3, "--attempts=0:abc123,1:abc123"), 0);

  // A damaged row (a step's sample count) is refused, and no partial copy stays beside the file.
  const std::string damage = "/usr/bin/python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); "
                             "r = f['steps'][0]; r['n_samples'] += 5; f['steps'][0] = r\" '" + path + "'";
  ASSERT_EQ(std::system(damage.c_str()), 0);
  auto damaged = TrajectoryFile::resume(path, meta(), 0, SwmrMode::kOff);
  ASSERT_FALSE(damaged.has_value());
  EXPECT_EQ(damaged.status().exit_code(), 2);
  EXPECT_NE(damaged.status().message().find("step 0 lists"), std::string::npos) << damaged.status().message();
  EXPECT_FALSE(std::filesystem::exists(path + ".resume.tmp"));

  auto junk = fresh("junk.h5");
  std::ofstream(junk) << "not hdf5";
  auto bad = TrajectoryFile::resume(junk, meta(), 0, SwmrMode::kOff);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().exit_code(), 2);
  auto missing = TrajectoryFile::resume(fresh("none.h5"), meta(), 0, SwmrMode::kOff);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// A resumed run whose file was moved aside (it lacked the checkpoint's steps) starts a new file
// whose first start is the step after the checkpoint's, and its rows begin there.
TEST(Trajectory, ANewFileCanStartAfterACheckpointsStep) {
  auto path = fresh("t_after.h5");
  {
    auto f = TrajectoryFile::create(path, meta(), SwmrMode::kOff, /*first_step=*/5);
    ASSERT_TRUE(f.has_value()) << f.status().message();
    append(**f, 5);
    append(**f, 6);
  }
  const std::string cmd =
      "/usr/bin/python3 -c \"import h5py, json, sys; f = h5py.File(sys.argv[1], 'r'); "
      "a = json.loads(f.attrs['attempts']); s = [int(x) for x in f['steps']['step']]; "
      "sys.exit(0 if [x['first_step'] for x in a] == [5] and s == [5, 6] else 1)\" '" + path + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Trajectory, SwmrModes) {
  SwmrMode m;
  EXPECT_TRUE(parse_swmr_mode("auto", &m));
  EXPECT_EQ(m, SwmrMode::kAuto);
  EXPECT_FALSE(parse_swmr_mode("yes", &m));
  EXPECT_TRUE(swmr_supported_at(::testing::TempDir() + "x.h5"));  // local disk, not NFS
  // statfs f_type magics: ext4, xfs, tmpfs, Lustre, GPFS keep SWMR; NFS, BeeGFS, CIFS, FUSE not.
  for (long on : {0xEF53L, 0x58465342L, 0x01021994L, 0x0BD00BD0L, 0x47504653L})
    EXPECT_TRUE(swmr_supported_on(on)) << std::hex << on;
  for (long off : {0x6969L, 0x19830326L, 0xFF534D42L, 0x65735546L})
    EXPECT_FALSE(swmr_supported_on(off)) << std::hex << off;
}

}  // namespace
}  // namespace leap::io
