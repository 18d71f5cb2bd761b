// The job's CPU seconds: this process's own time, and a live child's, which getrusage does not
// see until the child is reaped (the sandbox's workers live for the whole run).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/cpu_time.h"

namespace leap {
namespace {

void spin_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile double x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1.0;
}

TEST(CpuTime, CountsThisProcessAndALiveChild) {
  const double t0 = process_tree_cpu_seconds();
  spin_for(0.3);
  const double t1 = process_tree_cpu_seconds();
  EXPECT_GT(t1 - t0, 0.2);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spin_for(0.5);
    pause();  // stays alive, unreaped, until killed
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  const double t2 = process_tree_cpu_seconds();
  // The parent slept: what was added is the live child's half second (on a busy machine it may
  // have had less of a core, but some).
  EXPECT_GT(t2 - t1, 0.1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace leap
