// The supervisor side of the sandbox's isolation (docs/design.md, Isolation): a pool of worker
// processes, each a fresh `leap worker` started by posix_spawn (never a fork() of this process,
// which may hold MPI or CUDA state), each talking over its own Unix socket pair.
//
// Promises:
//  - run() is thread-safe; at most `workers` jobs run at once, the others wait for a worker;
//  - a job that passes its compile or run timeout gets TIMEOUT, and its worker is killed
//    (SIGKILL) and respawned; a worker killed by its CPU limit is a TIMEOUT too;
//  - a worker that dies otherwise (crash, killed from outside, broken channel) is an
//    infrastructure fault: the job is retried once on a fresh worker, and only then reported as
//    SANDBOX_ERROR, which is never the candidate's penalty;
//  - a worker killed by its seccomp filter (SIGSYS) gives the job RUNTIME_ERROR ("forbidden
//    system call"), not retried: that is the candidate's doing;
//  - workers start with an allow-listed environment (confinement.h) in "/", and confine
//    themselves before they say they are ready; with sandbox.confine=on, start() refuses
//    (invalid_input) where the kernel offers no Landlock or seccomp;
//  - nothing a candidate does can end the supervisor.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/job_channel.h"
#include "sandbox/sandbox_config.h"

namespace leap::sandbox {

struct WorkerPoolOptions {
  std::string leap_binary;         // the `leap` executable; empty: this process's own executable
  SandboxConfig config;            // config.device must be "cpu" or "gpu" (resolved, not "auto")
  double startup_timeout_s = 120;  // a GPU worker initialises CUDA before it is ready
  // Called on the job's thread with the worker's pid when the worker reports that the job
  // compiled and its run starts: the event tests wait on to kill a worker mid-job.
  std::function<void(pid_t)> on_run_started;
};

struct WorkerPoolStats {
  uint64_t jobs = 0;
  uint64_t spawns = 0;
  uint64_t timeouts = 0;
  uint64_t crashes = 0;
  uint64_t forbidden_syscalls = 0;  // workers the seccomp filter killed (RUNTIME_ERROR)
  uint64_t candidate_crashes = 0;   // jobs whose both attempts crashed alike (RUNTIME_ERROR or COMPILE_ERROR)
};

class WorkerPool final : public JobChannel {
 public:
  // Starts every worker and waits for each to be ready.
  static Expected<std::unique_ptr<WorkerPool>> start(WorkerPoolOptions options);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  JobReport run(const JobRequest& request) override;
  bool on_gpu() const override { return options_.config.device == "gpu"; }

  WorkerPoolStats stats() const;
  // Process ids of the live workers (for tests that kill one mid-job).
  std::vector<pid_t> worker_pids() const;
  // What the last worker said when ready: its executor and its confinement.
  std::string worker_description() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    bool busy = false;
  };
  explicit WorkerPool(WorkerPoolOptions options);
  Status spawn(Worker& w);
  void kill_worker(Worker& w, int* wait_status);
  // How a worker was lost during a job: killed by a signal the job's own code can raise (a fault
  // in the compiler or the interpreter a source or kernel ran into), and in which phase.
  struct Crash {
    int signal = 0;  // 0: lost otherwise (SIGKILL from outside, a broken channel, a failed start)
    bool running = false;  // after the compile
    bool operator==(const Crash&) const = default;
  };
  // One attempt on one worker. `lost` is set when the worker died for a reason that is not
  // known to be the candidate's (the caller retries once); `crash` says how.
  JobReport attempt(Worker& w, const JobRequest& request, bool* lost, Crash* crash);

  WorkerPoolOptions options_;
  std::vector<std::string> argv_;
  mutable std::mutex mutex_;
  std::condition_variable free_;
  std::vector<Worker> workers_;
  WorkerPoolStats stats_;
  std::string worker_description_;
};

}  // namespace leap::sandbox
