// Worker confinement: the allow-listed environment, the user change, the Landlock ruleset and
// the seccomp filter (see confinement.h). The Landlock structures and rights are declared here
// rather than taken from <linux/landlock.h>, whose copy on older distributions (Debian 12's
// 6.1 headers) stops at ABI 2; the kernel is asked which ABI it has and only that much is used.
#include "sandbox/confinement.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "common/sanitizers.h"

namespace leap::sandbox {

namespace {

// Sanitizer runtimes need what the filter forbids: LeakSanitizer stops the world from a
// ptrace-ing helper made by clone() without CLONE_THREAD, which then signals this process's
// threads. An ASan build relaxes those rules, and the ones on signals and limits of other
// processes (documented in docs/design.md, Isolation); a release build never does.
constexpr bool kSanitizerBuild = kAddressSanitizer;

// Landlock, as the kernel defines it (include/uapi/linux/landlock.h).
struct LandlockRulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};
struct __attribute__((packed)) LandlockPathBeneathAttr {
  uint64_t allowed_access = 0;
  int32_t parent_fd = -1;
};
constexpr uint32_t kLandlockCreateRulesetVersion = 1u << 0;
constexpr int kLandlockRulePathBeneath = 1;
constexpr uint64_t kFsExecute = 1ull << 0;
constexpr uint64_t kFsWriteFile = 1ull << 1;
constexpr uint64_t kFsReadFile = 1ull << 2;
constexpr uint64_t kFsReadDir = 1ull << 3;
constexpr uint64_t kFsAbi1 = (1ull << 13) - 1;  // execute .. make_sym
constexpr uint64_t kFsRefer = 1ull << 13;       // ABI 2
constexpr uint64_t kFsTruncate = 1ull << 14;    // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15;    // ABI 5
constexpr uint64_t kNetBindTcp = 1ull << 0;     // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;
// Rights that may be granted on a file (not a folder) in a path-beneath rule.
constexpr uint64_t kFileRights = kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

long landlock_create_ruleset(const LandlockRulesetAttr* attr, size_t size, uint32_t flags) {
  return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

uint64_t handled_fs_rights(int abi) {
  uint64_t r = kFsAbi1;
  if (abi >= 2) r |= kFsRefer;
  if (abi >= 3) r |= kFsTruncate;
  if (abi >= 5) r |= kFsIoctlDev;
  return r;
}

struct ScopedFd {
  int fd = -1;
  explicit ScopedFd(int f) : fd(f) {}
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
};

// Adds "path and everything beneath it may get `rights`"; a path that does not exist is skipped
// (the GPU list names files that only some drivers create).
Status allow_path(int ruleset, const std::string& path, uint64_t rights, int* added) {
  ScopedFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (fd.fd < 0) return Status::ok();
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) rights &= kFileRights;
  LandlockPathBeneathAttr rule;
  rule.allowed_access = rights;
  rule.parent_fd = fd.fd;
  if (::syscall(SYS_landlock_add_rule, ruleset, kLandlockRulePathBeneath, &rule, 0) != 0)
    return io_error(fmt::format("landlock_add_rule({}): {}", path, std::strerror(errno)));
  ++*added;
  return Status::ok();
}

// The files a GPU worker still touches after its CUDA context exists: the driver's device nodes
// (read, write and ioctl) and, read-only, the driver's /proc and /sys entries and the library
// folders it may load from lazily. benchmarks/gpu_check.sh records a GPU worker's real accesses
// (scripts/record_worker_access.sh) to check this list.
std::vector<std::string> gpu_device_files() {
  std::vector<std::string> out = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                  "/dev/nvidia-modeset", "/dev/nvidia-caps"};
  if (DIR* d = ::opendir("/dev")) {
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n.size() > 6 && n.substr(0, 6) == "nvidia" &&
          n.find_first_not_of("0123456789", 6) == std::string_view::npos)
        out.push_back("/dev/" + std::string(n));
    }
    ::closedir(d);
  }
  return out;
}

std::vector<std::string> gpu_read_only_folders() {
  std::vector<std::string> out = {"/proc/driver/nvidia", "/sys/devices", "/sys/bus/pci",
                                  "/sys/module/nvidia", "/usr/lib", "/lib", "/usr/lib64",
                                  "/usr/local/cuda", "/usr/local/nvidia", "/etc/ld.so.cache"};
  if (const char* p = std::getenv("LD_LIBRARY_PATH")) {
    std::string_view s = p;
    for (size_t a = 0; a <= s.size();) {
      size_t b = s.find(':', a);
      if (b == std::string_view::npos) b = s.size();
      if (b > a) out.emplace_back(s.substr(a, b - a));
      a = b + 1;
    }
  }
  return out;
}

Expected<std::string> apply_landlock(const ConfinementPlan& plan, int abi) {
  LandlockRulesetAttr attr;
  attr.handled_access_fs = handled_fs_rights(abi);
  if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  ScopedFd ruleset(static_cast<int>(landlock_create_ruleset(&attr, sizeof(attr), 0)));
  if (ruleset.fd < 0)
    return io_error(fmt::format("landlock_create_ruleset: {}", std::strerror(errno)));
  int added = 0;
  const uint64_t read = (kFsReadFile | kFsReadDir) & attr.handled_access_fs;
  for (const auto& p : plan.read_only) LEAP_RETURN_IF_ERROR(allow_path(ruleset.fd, p, read, &added));
  if (plan.gpu) {
    for (const auto& p : gpu_read_only_folders())
      LEAP_RETURN_IF_ERROR(allow_path(ruleset.fd, p, read, &added));
    const uint64_t device = (kFsReadFile | kFsReadDir | kFsWriteFile | kFsIoctlDev) &
                            attr.handled_access_fs;
    for (const auto& p : gpu_device_files())
      LEAP_RETURN_IF_ERROR(allow_path(ruleset.fd, p, device, &added));
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0)
    return io_error(fmt::format("landlock_restrict_self: {}", std::strerror(errno)));
  return fmt::format("Landlock ABI {} ({} read-only rule{}{})", abi, added, added == 1 ? "" : "s",
                     abi >= 6 ? ", signals and abstract sockets scoped" : "");
}

// Kills the process on the calls a kernel's compiler and runtime never make once set up.
constexpr std::array<int, 58> kForbiddenSyscalls = {
    SCMP_SYS(socket),           SCMP_SYS(socketpair),       SCMP_SYS(connect),
    SCMP_SYS(bind),             SCMP_SYS(listen),           SCMP_SYS(accept),
    SCMP_SYS(accept4),          SCMP_SYS(execve),           SCMP_SYS(execveat),
    SCMP_SYS(ptrace),           SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(mount),            SCMP_SYS(umount2),          SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),           SCMP_SYS(setns),            SCMP_SYS(unshare),
    SCMP_SYS(fork),             SCMP_SYS(vfork),            SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),  SCMP_SYS(init_module),      SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),    SCMP_SYS(bpf),              SCMP_SYS(perf_event_open),
    SCMP_SYS(keyctl),           SCMP_SYS(add_key),          SCMP_SYS(request_key),
    SCMP_SYS(userfaultfd),      SCMP_SYS(io_uring_setup),   SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register), SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at),
    SCMP_SYS(swapon),           SCMP_SYS(swapoff),          SCMP_SYS(reboot),
    SCMP_SYS(setuid),           SCMP_SYS(setgid),           SCMP_SYS(setreuid),
    SCMP_SYS(setregid),         SCMP_SYS(setresuid),        SCMP_SYS(setresgid),
    SCMP_SYS(setgroups),        SCMP_SYS(capset),           SCMP_SYS(iopl),
    SCMP_SYS(ioperm),           SCMP_SYS(acct),             SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime),    SCMP_SYS(adjtimex),         SCMP_SYS(syslog),
    SCMP_SYS(fsopen),           SCMP_SYS(open_tree),        SCMP_SYS(move_mount),
    SCMP_SYS(pidfd_getfd)};

Expected<std::string> apply_seccomp() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return io_error("seccomp_init failed");
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  int rules = 0;
  auto add = [&](uint32_t action, int nr, unsigned count, const scmp_arg_cmp* args) -> Status {
    if (int rc = seccomp_rule_add_array(ctx, action, nr, count, args); rc != 0)
      return io_error(fmt::format("seccomp_rule_add(system call {}): {}", nr, std::strerror(-rc)));
    ++rules;
    return Status::ok();
  };
  for (int nr : kForbiddenSyscalls) {
    if (kSanitizerBuild && nr == SCMP_SYS(ptrace)) continue;
    LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, nr, 0, nullptr));
  }
  if (!kSanitizerBuild) {
    // Threads only: clone() without CLONE_THREAD would be a new process.
    const scmp_arg_cmp not_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
    LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1, &not_thread));
  }
  // Signals and limits for this process only: unless sandbox.user dropped it to another user,
  // the worker has the MPI ranks' uid, and a kernel that took it over could otherwise kill them
  // or shrink their limits. raise() and abort() are tgkill(self), getrlimit and setrlimit are
  // prlimit64(0); tkill and pidfd signals are never needed.
  // (An AddressSanitizer build leaves them out, as it does ptrace and clone: LeakSanitizer's tracer
  // is another process that stops and signals this one's threads.)
  if (!kSanitizerBuild) {
    const auto self = static_cast<scmp_datum_t>(::getpid());
    const scmp_arg_cmp not_self = SCMP_A0(SCMP_CMP_NE, self), not_zero = SCMP_A0(SCMP_CMP_NE, 0);
    LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, SCMP_SYS(kill), 1, &not_self));
    LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, SCMP_SYS(tgkill), 1, &not_self));
    LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, SCMP_SYS(prlimit64), 1, &not_zero));
    for (int nr : {SCMP_SYS(tkill), SCMP_SYS(pidfd_send_signal), SCMP_SYS(kcmp)})
      LEAP_RETURN_IF_ERROR(add(SCMP_ACT_KILL_PROCESS, nr, 0, nullptr));
  }
  // clone3's flags sit in memory a filter cannot read: make it unavailable, and the C library
  // falls back to clone(), which the rule above checks.
  LEAP_RETURN_IF_ERROR(add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, nullptr));
  if (int rc = seccomp_load(ctx); rc != 0)
    return io_error(fmt::format("seccomp_load: {}", std::strerror(-rc)));
  return fmt::format("seccomp-bpf ({} rules{})", rules,
                     kSanitizerBuild ? ", sanitizer build: ptrace, clone and signals allowed" : "");
}

Expected<std::string> drop_user(const std::string& user) {
  if (::geteuid() != 0) return fmt::format("user {} (not root: unchanged)", ::geteuid());
  errno = 0;
  const passwd* pw = ::getpwnam(user.c_str());
  if (!pw)
    return invalid_input(fmt::format(
        "sandbox.user: no user '{}' on this machine (set sandbox.user to an unprivileged user)",
        user));
  if (pw->pw_uid == 0)
    return invalid_input(fmt::format("sandbox.user: '{}' is root; name an unprivileged user", user));
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
    return io_error(fmt::format("dropping to user '{}': {}", user, std::strerror(errno)));
  if (::setuid(0) == 0) return internal_error("dropping the user: root could be regained");
  return fmt::format("user {} (uid {})", user, uid);
}

}  // namespace

std::string ConfinementSupport::describe() const {
  std::string ll = landlock_abi > 0 ? fmt::format("Landlock ABI {}", landlock_abi)
                                    : "no Landlock (" + landlock_error + ")";
  std::string sc = seccomp ? "seccomp-bpf" : "no seccomp (" + seccomp_error + ")";
  return ll + ", " + sc;
}

ConfinementSupport probe_confinement() {
  ConfinementSupport s;
  long abi = landlock_create_ruleset(nullptr, 0, kLandlockCreateRulesetVersion);
  if (abi > 0) {
    s.landlock_abi = static_cast<int>(abi);
  } else {
    s.landlock_error = errno == ENOSYS       ? "the kernel was built without it"
                       : errno == EOPNOTSUPP ? "disabled at boot: add landlock to the lsm= list"
                                             : std::strerror(errno);
  }
  uint32_t action = SECCOMP_RET_KILL_PROCESS;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) {
    s.seccomp = true;
  } else {
    s.seccomp_error = errno == ENOSYS || errno == EINVAL
                          ? "the kernel was built without seccomp filters"
                          : std::strerror(errno);
  }
  return s;
}

Status require_confinement(const ConfinementSupport& support) {
  if (support.complete()) return Status::ok();
  return invalid_input(
      "the sandbox cannot confine its workers on this machine (" + support.describe() +
      "): run where the kernel offers Landlock and seccomp (Linux 5.13 or later, with landlock in "
      "the lsm= boot list), or set sandbox.confine=off to run the workers unconfined (logged; "
      "a hostile answer may then read host files through the compiler)");
}

std::vector<std::string> worker_environment(char* const* parent_environment) {
  static constexpr std::array<std::string_view, 15> kKept = {
      "PATH",          "LD_LIBRARY_PATH",     "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
      "CUDA_HOME",     "CUDA_PATH",           "CUDA_MODULE_LOADING",  "LEAP_CUDA_INCLUDE",
      "LANG",          "LC_ALL",              "ASAN_OPTIONS",         "UBSAN_OPTIONS",
      "LSAN_OPTIONS",  "TSAN_OPTIONS",        "MSAN_OPTIONS"};
  std::vector<std::string> out;
  for (char* const* e = parent_environment; e && *e; ++e) {
    std::string_view kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = kv.substr(0, eq);
    if (name == "CUDA_CACHE_DISABLE") continue;
    for (auto k : kKept) {
      if (name == k) {
        out.emplace_back(kv);
        break;
      }
    }
  }
  out.emplace_back("CUDA_CACHE_DISABLE=1");
  return out;
}

Expected<std::string> confine_self(const ConfinementPlan& plan) {
  const ConfinementSupport support = probe_confinement();
  LEAP_RETURN_IF_ERROR(require_confinement(support));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return io_error(std::string("prctl(NO_NEW_PRIVS): ") + std::strerror(errno));
  auto user = drop_user(plan.user);
  if (!user) return user.status();
  auto files = apply_landlock(plan, support.landlock_abi);
  if (!files) return files.status();
  auto calls = apply_seccomp();
  if (!calls) return calls.status();
  return *user + "; " + *files + "; " + *calls;
}

}  // namespace leap::sandbox
