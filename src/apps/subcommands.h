// The subcommands of `leap`: name, one-line summary, and the function that runs it.
// A subcommand returns a process exit code: 0 success, 2 bad input, 1 internal failure.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace leap::app {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args after the subcommand name
  bool hidden = false;                                // internal (e.g. the sandbox worker)
};

const std::vector<Subcommand>& subcommands();

// Shared by subcommands: parses options into `opts`, runs `validate` (the checks that involve
// several options), and handles --help / --print-config: a config that the command would refuse
// is refused by --print-config too. Returns -1 to continue, or the exit code to return now.
int parse_or_exit(const char* sub, const char* usage, const std::vector<std::string>& args,
                  ::leap::OptionSet& opts, const std::function<Status()>& validate = nullptr);

// Prints "leap SUB: error: MESSAGE" to stderr and returns the status's exit code.
int report_error(const std::string& sub, const Status& st);

int run_train(const std::vector<std::string>& args);
int run_eval(const std::vector<std::string>& args);   // eval_command.cpp
int run_tasks(const std::vector<std::string>& args);  // tasks_command.cpp
int run_layout(const std::vector<std::string>& args);  // layout_command.cpp
int run_plan(const std::vector<std::string>& args);    // plan_command.cpp
int run_score(const std::vector<std::string>& args);  // score_command.cpp
int run_check(const std::vector<std::string>& args);   // check_command.cpp
int run_analyze(const std::vector<std::string>& args);  // analyze_command.cpp
int run_tokenize(const std::vector<std::string>& args);  // tokenize_command.cpp
int run_env(const std::vector<std::string>& args);       // env_command.cpp
int run_worker(const std::vector<std::string>& args);  // worker_command.cpp (hidden)
int run_not_built(const char* sub);
// The device lines of `leap --version` and `leap env` (env_command.cpp): the GPUs found, or why
// none, and the CUDA libraries. 0, or the exit code of a driver too old for this build.
int print_devices(const char* sub);

}  // namespace leap::app
