// Worker confinement (src/sandbox/confinement.h), tried as a hostile policy would.
//
//  - Hostile answers: every way found to make the compiler read a host file (line splices,
//    digraphs, trigraphs, macro-built paths, #line, relative paths, /proc/self/environ and maps,
//    symlinks) goes through the real path (Verifier, `leap worker`, its text filter) against a
//    world-readable secret, and the secret never appears in any output.
//  - The control: the same answers compiled by a test-only worker with the text filter skipped
//    and sandbox.confine=off do leak, so these tests can fail.
//  - The confinement itself: the test-only worker (confinement_probe) tries open, write, socket,
//    execve and ptrace; it is refused or killed, the job gets a verdict, and the pool serves on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "common/sanitizers.h"
#include "sandbox/confinement.h"
#include "sandbox/verifier.h"
#include "sandbox/worker_pool.h"
#include "verify_fixture.h"

namespace leap::sandbox {
namespace {

namespace fs = std::filesystem;
using testing::answer;
using testing::kGoodKernel;
using testing::kGoodLaunch;

std::string random_token(const char* prefix) {
  std::random_device rd;
  return fmt::format("{}{:08x}{:08x}", prefix, rd(), rd());
}

// A world-readable secret (0644 in a 0755 folder), a symlink to it, and a secret environment
// variable, as an API token would be.
class Secret {
 public:
  Secret() : token_(random_token("LEAP_SECRET_")), env_token_(random_token("LEAP_ENV_SECRET_")) {
    char tmpl[] = "/tmp/leap-secret-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::chmod(dir_.c_str(), 0755);
    std::ofstream(file()) << token_ << " = 1;\n";
    ::chmod(file().c_str(), 0644);
    fs::create_symlink(file(), link());
    ::setenv("LEAP_TEST_API_TOKEN", env_token_.c_str(), 1);
  }
  ~Secret() {
    ::unsetenv("LEAP_TEST_API_TOKEN");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& token() const { return token_; }
  const std::string& env_token() const { return env_token_; }
  const std::string& dir() const { return dir_; }
  std::string file() const { return dir_ + "/secret.h"; }
  std::string link() const { return dir_ + "/link.h"; }

 private:
  std::string token_, env_token_, dir_;
};

struct Hostile {
  std::string name;
  std::string prelude;     // put before a correct kernel
  bool control_leaks;      // the unconfined, unfiltered control shows the file's contents
  std::string control_sign;  // what the control's output shows when it read the file
};

std::vector<Hostile> hostile_answers(const Secret& s) {
  // The secret's path without quotes, for the stringizing macro.
  std::string up;
  for (int i = 0; i < 12; ++i) up += "../";
  return {
      {"plain", "#include \"" + s.file() + "\"\n", true, s.token()},
      {"angle", "#include <" + s.file() + ">\n", true, s.token()},
      {"line_splice", "#\\\ninclude \"" + s.file() + "\"\n", true, s.token()},
      {"digraph", "%:include \"" + s.file() + "\"\n", true, s.token()},
      {"macro_path", "#define HDR \"" + s.file() + "\"\n#include HDR\n", true, s.token()},
      {"stringized_path",
       "#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR(" + s.file() + ")\n", true,
       s.token()},
      {"relative_path", "#include \"" + up + s.file().substr(1) + "\"\n", true, s.token()},
      {"symlink", "#include \"" + s.link() + "\"\n", true, s.token()},
      // C++17 removed trigraphs, so NVRTC reads "??=" as tokens: no file is opened.
      {"trigraph", "?\?=include \"" + s.file() + "\"\n", false, ""},
      // #line renames the source in diagnostics; it reads nothing.
      {"line_directive", "#line 1 \"" + s.file() + "\"\nnot_a_declaration\n", false, ""},
      // The environment is filtered at the spawn: even unconfined, the token is not there.
      {"proc_environ", "#include \"/proc/self/environ\"\n", true, "CUDA_CACHE_DISABLE=1"},
      {"proc_maps", "#include \"/proc/self/maps\"\n", true, "r-xp"},
  };
}

std::string leap_binary() { return std::string(LEAP_BINARY_DIR) + "/src/apps/leap"; }
std::string probe_binary() {
  return std::string(LEAP_BINARY_DIR) + "/tests/sandbox/confinement_probe";
}

std::unique_ptr<WorkerPool> start_pool(const std::string& binary, const std::string& confine) {
  WorkerPoolOptions o;
  o.leap_binary = binary;
  o.config.device = "cpu";
  o.config.workers = 1;
  o.config.confine = confine;
  auto pool = WorkerPool::start(o);
  EXPECT_TRUE(pool.has_value()) << pool.status().message();
  return pool.has_value() ? std::move(*pool) : nullptr;
}

JobReport run_code(WorkerPool& pool, const std::string& code) {
  JobRequest r;
  r.task = testing::relu_scale_task();
  r.code = code;
  return pool.run(r);
}

// Confinement needs Landlock and seccomp from the kernel; without them the sandbox refuses to
// start (tested below), and these tests skip, visibly.
#define SKIP_WITHOUT_CONFINEMENT()                                                  \
  if (!probe_confinement().complete())                                              \
  GTEST_SKIP() << "this kernel cannot confine: " << probe_confinement().describe()

TEST(Confinement, EnvironmentIsAllowListed) {
  std::vector<std::string> parent = {"PATH=/usr/bin", "HF_TOKEN=hf_abc", "AWS_SECRET_ACCESS_KEY=x",
                                     "CUDA_VISIBLE_DEVICES=3", "CUDA_CACHE_DISABLE=0",
                                     "LD_PRELOAD=/tmp/evil.so", "PATHX=1", "noequals"};
  std::vector<char*> envp;
  for (auto& e : parent) envp.push_back(e.data());
  envp.push_back(nullptr);
  EXPECT_EQ(worker_environment(envp.data()),
            (std::vector<std::string>{"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=3",
                                      "CUDA_CACHE_DISABLE=1"}));
}

TEST(Confinement, RefusalNamesTheOverride) {
  ConfinementSupport none;
  none.landlock_error = "the kernel was built without it";
  none.seccomp = true;
  Status st = require_confinement(none);
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find("sandbox.confine=off"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("no Landlock"), std::string::npos) << st.message();
  ConfinementSupport full;
  full.landlock_abi = 2;
  full.seccomp = true;
  EXPECT_TRUE(require_confinement(full).is_ok());
}

TEST(Confinement, WorkersSayHowTheyAreConfined) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SKIP_WITHOUT_CONFINEMENT();
  auto pool = start_pool(leap_binary(), "on");
  ASSERT_TRUE(pool);
  const std::string d = pool->worker_description();
  EXPECT_NE(d.find("Landlock ABI"), std::string::npos) << d;
  EXPECT_NE(d.find("seccomp-bpf"), std::string::npos) << d;
  if (::geteuid() == 0) {
    EXPECT_NE(d.find("user nobody"), std::string::npos) << d;
  }
  // And the confined worker still verifies answers.
  Verifier v(*pool, SandboxConfig{});
  EXPECT_EQ(verdict_name(v.verify(testing::relu_scale_task(), answer(kGoodKernel, kGoodLaunch))
                             .verdict),
            "OK");
}

TEST(Confinement, HostileAnswersRevealNothing) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SKIP_WITHOUT_CONFINEMENT();
  Secret secret;
  auto pool = start_pool(leap_binary(), "on");
  ASSERT_TRUE(pool);
  SandboxConfig config;
  config.result_cache_entries = 0;
  Verifier v(*pool, config);
  for (const auto& h : hostile_answers(secret)) {
    VerifyResult r = v.verify(testing::relu_scale_task(),
                              answer(h.prelude + kGoodKernel, kGoodLaunch));
    SCOPED_TRACE(h.name + ": " + std::string(verdict_name(r.verdict)) + ": " + r.feedback);
    EXPECT_EQ(r.feedback.find(secret.token()), std::string::npos);
    EXPECT_EQ(r.feedback.find(secret.env_token()), std::string::npos);
    EXPECT_NE(verdict_name(r.verdict), "OK");
    EXPECT_NE(verdict_name(r.verdict), "SANDBOX_ERROR");
  }
}

// Every hostile answer compiled by the test-only worker, which skips the text filter. Confined,
// nothing of the secret (or of /proc) shows. The control, unconfined: the answers that read a
// file do show it, so this test would see a leak if confinement failed.
void compile_unfiltered(bool confined) {
  Secret secret;
  auto pool = start_pool(probe_binary(), confined ? "on" : "off");
  ASSERT_TRUE(pool);
  for (const auto& h : hostile_answers(secret)) {
    JobReport r = run_code(*pool, h.prelude + kGoodKernel);
    SCOPED_TRACE(h.name + ": " + r.outcome.message);
    const bool shown = r.outcome.message.find(h.control_sign) != std::string::npos;
    if (h.control_leaks) {
      EXPECT_EQ(shown, !confined);
    } else {
      EXPECT_EQ(r.outcome.message.find(secret.token()), std::string::npos);
    }
    if (confined) {
      EXPECT_EQ(r.outcome.message.find(secret.token()), std::string::npos);
    }
    // The environment is filtered at the spawn, confined or not.
    EXPECT_EQ(r.outcome.message.find(secret.env_token()), std::string::npos);
  }
}

TEST(Confinement, FilterSkippedConfinedWorkerRevealsNothing) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SKIP_WITHOUT_CONFINEMENT();
  compile_unfiltered(true);
}

TEST(Confinement, ControlWithoutConfinementLeaks) {
  LEAP_SKIP_WITHOUT_NVRTC();
  compile_unfiltered(false);
}

TEST(Confinement, CompromisedWorkerIsRefusedOrKilled) {
  LEAP_SKIP_WITHOUT_NVRTC();
  SKIP_WITHOUT_CONFINEMENT();
  Secret secret;
  auto pool = start_pool(probe_binary(), "on");
  ASSERT_TRUE(pool);
  JobReport open = run_code(*pool, "probe:open:" + secret.file());
  EXPECT_EQ(verdict_name(open.outcome.verdict), "RUNTIME_ERROR") << open.outcome.message;
  EXPECT_NE(open.outcome.message.find("Permission denied"), std::string::npos)
      << open.outcome.message;
  ::chmod(secret.dir().c_str(), 0777);  // so only Landlock, not the folder's mode, can refuse
  JobReport write = run_code(*pool, "probe:write:" + secret.dir() + "/planted.h");
  EXPECT_EQ(verdict_name(write.outcome.verdict), "RUNTIME_ERROR") << write.outcome.message;
  EXPECT_FALSE(fs::exists(secret.dir() + "/planted.h"));
  const uint64_t spawns = pool->stats().spawns;
  // An AddressSanitizer build keeps ptrace open for LeakSanitizer (confinement.cpp).
  std::vector<std::string> acts = {"probe:socket", "probe:execve"};
  if (!kAddressSanitizer) acts.insert(acts.end(), {"probe:ptrace", "probe:kill", "probe:prlimit"});
  for (const std::string& act : acts) {
    JobReport r = run_code(*pool, act);
    EXPECT_EQ(verdict_name(r.outcome.verdict), "RUNTIME_ERROR") << act << ": " << r.outcome.message;
    EXPECT_EQ(r.outcome.message, kForbiddenSyscallFeedback) << act;
    // The pool serves on: the next job runs on a fresh worker.
    JobReport next = run_code(*pool, kGoodKernel);
    EXPECT_EQ(verdict_name(next.outcome.verdict), "OK") << next.outcome.message;
  }
  EXPECT_EQ(pool->stats().forbidden_syscalls, acts.size());
  // One replacement per killed worker, no retries: a forbidden call is the candidate's doing.
  EXPECT_EQ(pool->stats().spawns, spawns + acts.size());
  EXPECT_EQ(pool->stats().crashes, 0u);
}

TEST(Confinement, UnconfinedProbeCanDoWhatTheConfinedOneCannot) {
  LEAP_SKIP_WITHOUT_NVRTC();
  Secret secret;
  auto pool = start_pool(probe_binary(), "off");
  ASSERT_TRUE(pool);
  JobReport open = run_code(*pool, "probe:open:" + secret.file());
  EXPECT_NE(open.outcome.message.find(secret.token()), std::string::npos) << open.outcome.message;
  for (const char* act : {"probe:socket", "probe:kill", "probe:prlimit"}) {
    JobReport r = run_code(*pool, act);
    EXPECT_EQ(verdict_name(r.outcome.verdict), "OK") << act << ": " << r.outcome.message;
  }
}

}  // namespace
}  // namespace leap::sandbox
