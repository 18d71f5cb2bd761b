// A test-only sandbox worker: it starts exactly as `leap worker` does (limits, the PTX
// interpreter's executor, the NVRTC warm-up, confinement as sandbox.confine says) and then does
// what a compromised worker would try, one job at a time. It exists only as this test binary,
// so nothing reaches it through the real worker's wire protocol. A job's code selects the act:
//   probe:open:PATH     open PATH for reading; the report quotes what was read, or the error
//   probe:write:PATH    create PATH for writing
//   probe:socket        create a new socket
//   probe:execve        run /bin/true
//   probe:ptrace        attach to the parent
//   probe:kill          signal 0 to the parent (only asks whether it exists)
//   probe:prlimit       read the parent's open-files limit
//   anything else       compile it with NVRTC as it stands, skipping the answer's text filter;
//                       the report is COMPILE_ERROR with NVRTC's log, or OK
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "sandbox/cpu_executor.h"
#include "sandbox/wire.h"
#include "sandbox/worker_main.h"

namespace {

using leap::sandbox::JobReport;
using leap::sandbox::Verdict;

JobReport report(Verdict v, std::string message) {
  JobReport r;
  r.outcome = {v, std::move(message)};
  return r;
}

std::string error_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

JobReport act(leap::sandbox::Executor& executor, const std::string& code) {
  using std::string_view;
  const string_view c = code;
  if (c.rfind("probe:open:", 0) == 0) {
    const std::string path(c.substr(11));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return report(Verdict::kRuntimeError, error_text("open"));
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    ::close(fd);
    if (n < 0) return report(Verdict::kRuntimeError, error_text("read"));
    return report(Verdict::kOk, "read: " + std::string(buf, static_cast<size_t>(n)));
  }
  if (c.rfind("probe:write:", 0) == 0) {
    const std::string path(c.substr(12));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return report(Verdict::kRuntimeError, error_text("open for writing"));
    ::close(fd);
    return report(Verdict::kOk, "written");
  }
  if (c == "probe:socket") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return report(Verdict::kRuntimeError, error_text("socket"));
    ::close(fd);
    return report(Verdict::kOk, "socket created");
  }
  if (c == "probe:execve") {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execve("/bin/true", argv, nullptr);
    return report(Verdict::kRuntimeError, error_text("execve"));
  }
  if (c == "probe:ptrace") {
    if (::ptrace(PTRACE_ATTACH, ::getppid(), nullptr, nullptr) != 0)
      return report(Verdict::kRuntimeError, error_text("ptrace"));
    ::ptrace(PTRACE_DETACH, ::getppid(), nullptr, nullptr);
    return report(Verdict::kOk, "attached");
  }
  if (c == "probe:kill") {
    if (::kill(::getppid(), 0) != 0) return report(Verdict::kRuntimeError, error_text("kill"));
    return report(Verdict::kOk, "the parent can be signalled");
  }
  if (c == "probe:prlimit") {
    rlimit old{};
    if (::prlimit(::getppid(), RLIMIT_NOFILE, nullptr, &old) != 0)
      return report(Verdict::kRuntimeError, error_text("prlimit"));
    return report(Verdict::kOk, "the parent's limits can be read");
  }
  leap::sandbox::CompileOutcome compiled = executor.compile(code, {});
  if (compiled.outcome.verdict == Verdict::kOk) return report(Verdict::kOk, "compiled");
  return report(Verdict::kCompileError, compiled.outcome.message);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGUSR1, SIG_IGN);
  std::vector<std::string> args;
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);  // argv[1] is "worker"
  leap::OptionSet opts;
  leap::sandbox::SandboxConfig config;
  config.declare(opts);
  if (leap::Status st = opts.parse(args); !st) {
    std::fprintf(stderr, "confinement_probe: %s\n", st.message().c_str());
    return 2;
  }
  if (leap::Status st = leap::sandbox::apply_worker_limits(config, false); !st) return 1;
  auto compiler = std::make_shared<leap::sandbox::NvrtcCompiler>();
  leap::sandbox::CpuExecutor executor(compiler, {});
  if (leap::Status st = leap::sandbox::warm_up(executor); !st) return 1;
  auto confined = leap::sandbox::confine_worker(config, false, compiler->cuda_include_dir());
  if (!confined) {
    std::fprintf(stderr, "confinement_probe: %s\n", confined.status().message().c_str());
    return 1;
  }
  const int fd = leap::sandbox::kWorkerFd;
  namespace wire = leap::sandbox::wire;
  if (!wire::write_frame(fd, wire::FrameType::kReady, "probe; " + *confined)) return 1;
  for (;;) {
    auto frame = wire::read_frame(fd, std::chrono::steady_clock::time_point::max());
    if (!frame || frame->type != wire::FrameType::kRequest) return 0;
    auto request = wire::decode_request(frame->payload);
    if (!request) return 1;
    (void)wire::write_frame(fd, wire::FrameType::kCompiled, {});
    JobReport r = act(executor, request->code);
    if (!wire::write_frame(fd, wire::FrameType::kReport, wire::encode_report(r))) return 1;
  }
}
