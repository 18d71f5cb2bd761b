// Fuzz target: a config INI file (configs/*.ini and the INI stored with runs; semi-trusted). The
// file is parsed against the real [sandbox] and [tasks] declarations plus one option of each
// type with limits, choices and an alias, as `leap --config FILE` would: our line scan first,
// then Boost.Program_options. Any input must end in OK or a Status, never an exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/config.h"
#include "sandbox/sandbox_config.h"
#include "tasks/suite.h"

namespace {

struct FuzzOptions {
  int steps = 0;
  int64_t seed = 0;
  double lr = 0;
  bool flag = false;
  std::string mode;
  void declare(leap::OptionSet& opts) {
    opts.add("train.steps", &steps, 10, "steps", {.min = 1, .max = 1000000});
    opts.add("run.seed", &seed, int64_t{1}, "seed", {.alias = "seed"});
    opts.add("optim.lr", &lr, 1e-5, "lr", {.min = 0.0});
    opts.add("train.resume", &flag, false, "resume", {.bare = "true"});
    opts.add("train.mode", &mode, std::string("rl"), "mode", {.choices = {"rl", "sft"}});
  }
};

// One file per process, rewritten for every input (the parser reads configs from files only).
const std::string& config_path() {
  static const std::string path = (std::filesystem::temp_directory_path() /
                                   ("leap_fuzz_config_" + std::to_string(::getpid()) + ".ini"))
                                      .string();
  static const int removed_at_exit = std::atexit([] { std::remove(path.c_str()); });
  (void)removed_at_exit;
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(config_path().c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  leap::OptionSet opts;
  FuzzOptions fuzz;
  leap::sandbox::SandboxConfig sandbox;
  leap::tasks::TasksConfig tasks;
  fuzz.declare(opts);
  sandbox.declare(opts);
  tasks.declare(opts);
  (void)opts.parse({"--config", config_path()});
  (void)opts.to_ini();
  return 0;
}
