// The job's CPU seconds: this process's own time, and a live child's, which getrusage does not
// see until the child is reaped (the sandbox's workers live for the whole run).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <thread>

#include "common/cpu_time.h"

namespace leap {
namespace {

double own_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Spins until this process has used `seconds` of CPU, however loaded the machine is.
void spin_cpu(double seconds) {
  const double end = own_cpu_seconds() + seconds;
  volatile double x = 0;
  while (own_cpu_seconds() < end) x = x + 1.0;
}

TEST(CpuTime, CountsThisProcessAndALiveChild) {
  const double t0 = process_tree_cpu_seconds();
  spin_cpu(0.3);
  const double t1 = process_tree_cpu_seconds();
  EXPECT_GT(t1 - t0, 0.29);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spin_cpu(0.5);
    pause();  // stays alive, unreaped, until killed
    _exit(0);
  }
  // The parent only sleeps: what is added is the live child's half second of CPU, once it has
  // had it (a loaded machine may take a while to give it).
  double t2 = t1;
  for (int i = 0; i < 600 && t2 - t1 < 0.49; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t2 = process_tree_cpu_seconds();
  }
  EXPECT_GT(t2 - t1, 0.49);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace leap
