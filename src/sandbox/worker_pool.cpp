// WorkerPool: spawning, the per-job exchange with its two timeouts, and recovery. Every socket
// is created close-on-exec, so a worker spawned by one thread never inherits another worker's
// channel (which would keep that channel open after its worker died).
#include "sandbox/worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <climits>
#include <cstring>
#include <thread>

#include "sandbox/confinement.h"
#include "sandbox/wire.h"
#include "sandbox/worker_main.h"

extern char** environ;

namespace leap::sandbox {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "stopped";
}

JobReport verdict_report(Verdict v, std::string message) {
  JobReport r;
  r.outcome = {v, std::move(message)};
  return r;
}

}  // namespace

WorkerPool::WorkerPool(WorkerPoolOptions options) : options_(std::move(options)) {}

Expected<std::unique_ptr<WorkerPool>> WorkerPool::start(WorkerPoolOptions options) {
  if (options.config.device != "cpu" && options.config.device != "gpu")
    return invalid_input("worker pool: sandbox.device must be resolved to cpu or gpu, got " +
                         options.config.device);
  if (options.leap_binary.empty()) options.leap_binary = self_executable();
  if (::access(options.leap_binary.c_str(), X_OK) != 0)
    return not_found("worker pool: cannot execute the leap binary '" + options.leap_binary + "'");
  if (options.config.confine == "on") {
    LEAP_RETURN_IF_ERROR(require_confinement(probe_confinement()));
  } else {
    std::fprintf(stderr,
                 "[leap sandbox] warning: sandbox.confine=off: workers run without Landlock, "
                 "seccomp or a user change\n");
  }
  std::unique_ptr<WorkerPool> pool(new WorkerPool(std::move(options)));
  pool->argv_ = {pool->options_.leap_binary, "worker"};
  for (auto& a : pool->options_.config.to_args()) pool->argv_.push_back(std::move(a));
  pool->workers_.resize(static_cast<size_t>(pool->options_.config.workers));
  for (auto& w : pool->workers_) LEAP_RETURN_IF_ERROR(pool->spawn(w));
  return pool;
}

WorkerPool::~WorkerPool() {
  // Closing the socket asks a worker to finish; one that does not within a second is killed.
  for (auto& w : workers_) {
    if (w.pid <= 0) continue;
    ::close(w.fd);
    w.fd = -1;
    int status = 0;
    for (int i = 0; i < 100 && ::waitpid(w.pid, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(w.pid, &status, WNOHANG) == 0) kill_worker(w, &status);
  }
}

Status WorkerPool::spawn(Worker& w) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return io_error(std::string("socketpair: ") + std::strerror(errno));
  // Keep the child's end away from descriptor kWorkerFd, so dup2 really copies it (and so clears
  // close-on-exec on the copy).
  int child_end = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
  ::close(sv[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // A kernel's printf on the GPU goes to stdout: keep it away from everything.
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, child_end, kWorkerFd);
  // Relative include paths in a candidate resolve against "/", never against the run folder.
  posix_spawn_file_actions_addchdir_np(&fa, "/");
  std::vector<char*> argv;
  for (auto& a : argv_) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment is allow-listed here, at the exec: clearing it later in the worker would
  // leave the original in /proc/self/environ.
  std::vector<std::string> env = worker_environment(environ);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc =
      ::posix_spawn(&pid, options_.leap_binary.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(child_end);
  if (rc != 0) {
    ::close(sv[0]);
    return io_error(
        fmt::format("posix_spawn of '{}' failed: {}", options_.leap_binary, std::strerror(rc)));
  }
  {
    std::lock_guard lock(mutex_);  // worker_pids() reads pids from other threads
    w.pid = pid;
    w.fd = sv[0];
    ++stats_.spawns;
  }
  auto ready = wire::read_frame(w.fd, after(options_.startup_timeout_s));
  if (!ready || ready->type != wire::FrameType::kReady) {
    int status = 0;
    kill_worker(w, &status);
    return internal_error(fmt::format("sandbox worker did not start ({}; {})",
                                      ready ? "unexpected frame" : ready.status().message(),
                                      describe_exit(status)));
  }
  std::lock_guard lock(mutex_);
  worker_description_ = ready->payload;
  return Status::ok();
}

void WorkerPool::kill_worker(Worker& w, int* wait_status) {
  if (w.pid > 0) {
    ::kill(w.pid, SIGKILL);
    while (::waitpid(w.pid, wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (w.fd >= 0) ::close(w.fd);
  std::lock_guard lock(mutex_);
  w.pid = -1;
  w.fd = -1;
}

JobReport WorkerPool::attempt(Worker& w, const JobRequest& request, bool* lost, Crash* crash) {
  *lost = false;
  *crash = Crash{};
  int status = 0;
  // A worker that exited since its last job (it does after breaking its device) is replaced.
  if (w.pid > 0 && ::waitpid(w.pid, &status, WNOHANG) == w.pid) {
    ::close(w.fd);
    std::lock_guard lock(mutex_);
    w.pid = -1;
    w.fd = -1;
  }
  if (w.pid <= 0) {
    Status st = spawn(w);
    if (!st) {
      *lost = true;
      return verdict_report(Verdict::kSandboxError, st.message());
    }
  }
  const auto& cfg = options_.config;
  if (!wire::write_frame(w.fd, wire::FrameType::kRequest, wire::encode_request(request))) {
    kill_worker(w, &status);
    *lost = true;
    return verdict_report(Verdict::kSandboxError,
                          "sandbox worker channel broke: " + describe_exit(status));
  }
  bool compiled = false;
  auto deadline = after(cfg.compile_timeout_s);
  for (;;) {
    auto frame = wire::read_frame(w.fd, deadline);
    if (!frame) {
      const bool timed_out = wire::is_timeout(frame.status());
      kill_worker(w, &status);
      std::lock_guard lock(mutex_);
      if (!timed_out && WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
        // The seccomp filter killed it: the candidate's doing, never retried.
        ++stats_.forbidden_syscalls;
        return verdict_report(Verdict::kRuntimeError, kForbiddenSyscallFeedback);
      }
      if (timed_out || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)) {
        ++stats_.timeouts;
        if (!compiled)
          return verdict_report(Verdict::kTimeout, fmt::format("compilation took longer than {} s",
                                                               cfg.compile_timeout_s));
        return verdict_report(
            Verdict::kTimeout,
            timed_out
                ? fmt::format("the run took longer than {} s: an endless loop, a deadlock at a "
                              "barrier, or far too much work",
                              cfg.run_timeout_s)
                : fmt::format("the run used more than {} s of CPU time", cfg.limit_cpu_s));
      }
      ++stats_.crashes;
      *lost = true;
      if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGTRAP)
          *crash = Crash{sig, compiled};
      }
      return verdict_report(Verdict::kSandboxError,
                            fmt::format("sandbox worker {} during the job ({})",
                                        describe_exit(status), frame.status().message()));
    }
    if (frame->type == wire::FrameType::kCompiled && !compiled) {
      compiled = true;
      deadline = after(cfg.run_timeout_s);
      if (options_.on_run_started) options_.on_run_started(w.pid);
      continue;
    }
    if (frame->type != wire::FrameType::kReport) {
      kill_worker(w, &status);
      *lost = true;
      return verdict_report(Verdict::kSandboxError, "sandbox worker sent an unexpected frame");
    }
    auto report = wire::decode_report(frame->payload);
    if (!report) {
      kill_worker(w, &status);
      *lost = true;
      return verdict_report(Verdict::kSandboxError, report.status().message());
    }
    if (report->worker_exiting) kill_worker(w, &status);  // replaced by run() right away
    return std::move(*report);
  }
}

JobReport WorkerPool::run(const JobRequest& request) {
  Worker* w = nullptr;
  {
    std::unique_lock lock(mutex_);
    free_.wait(lock, [&] {
      for (auto& c : workers_)
        if (!c.busy) return true;
      return false;
    });
    for (auto& c : workers_) {
      if (!c.busy) {
        w = &c;
        break;
      }
    }
    w->busy = true;
    ++stats_.jobs;
  }
  bool lost = false;
  JobReport report;
  try {
    Crash first, again;
    report = attempt(*w, request, &lost, &first);
    if (lost) {  // SANDBOX_ERROR is always retried once
      report = attempt(*w, request, &lost, &again);
      // The same fault twice, in the same phase: the source or the kernel makes the compiler or
      // the interpreter crash, which is the candidate's doing, as a forbidden syscall is. As a
      // SANDBOX_ERROR its sample would be void, a better reward than a failure's.
      if (lost && first.signal != 0 && first == again) {
        std::lock_guard lock(mutex_);
        ++stats_.candidate_crashes;
        report = verdict_report(
            again.running ? Verdict::kRuntimeError : Verdict::kCompileError,
            fmt::format("the sandbox's worker process crashed ({}) {} this answer, on both attempts",
                        strsignal(again.signal), again.running ? "running the kernels of" : "compiling"));
      }
    }
  } catch (...) {
    {  // the slot stays usable
      std::lock_guard lock(mutex_);
      w->busy = false;
    }
    free_.notify_one();
    throw;
  }
  // A worker lost to a timeout or a crash is replaced now rather than at its next job, so the
  // next job does not pay for the start (a failure here is retried at the next job).
  if (w->pid <= 0) (void)spawn(*w);
  {
    std::lock_guard lock(mutex_);
    w->busy = false;
  }
  free_.notify_one();
  return report;
}

WorkerPoolStats WorkerPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string WorkerPool::worker_description() const {
  std::lock_guard lock(mutex_);
  return worker_description_;
}

std::vector<pid_t> WorkerPool::worker_pids() const {
  std::lock_guard lock(mutex_);
  std::vector<pid_t> pids;
  for (const auto& w : workers_)
    if (w.pid > 0) pids.push_back(w.pid);
  return pids;
}

}  // namespace leap::sandbox
