// `leap check --suite FILE --task ID --answer FILE [--device cpu|gpu]`: one answer against one
// task through the sandbox (worker processes, as in training), printed as one JSON object.
// Exit 0 whatever the verdict (a verdict is data); 2 for bad input (unknown task, unreadable
// file, invalid suite, a GPU asked for where there is none); 1 when the sandbox cannot start.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

#include "apps/subcommands.h"
#include "common/fs_util.h"
#include "cuda/device_probe.h"
#include "sandbox/sandbox_config.h"
#include "sandbox/sandbox_service.h"
#include "tasks/suite.h"

namespace leap::app {

namespace {

int fail(const Status& st) { return report_error("check", st); }

}  // namespace

int run_check(const std::vector<std::string>& args) {
  OptionSet opts;
  tasks::TasksConfig tasks_config;
  sandbox::SandboxConfig config;
  sandbox::CheckConfig check;
  tasks_config.declare(opts);
  config.declare(opts);
  check.declare(opts);
  if (int rc = parse_or_exit("check", "--suite FILE --task ID --answer FILE [--device cpu|gpu]",
                             args, opts);
      rc >= 0)
    return rc;
  if (check.task.empty() || check.answer.empty())
    return fail(
        invalid_input("--task ID and --answer FILE are required (see `leap check --help`)"));

  auto suite = tasks::load_suite(tasks_config.suite);
  if (!suite) return fail(suite.status());
  auto task = tasks::find_task(*suite, check.task);
  if (!task) return fail(task.status());
  auto answer = read_file(check.answer);
  if (!answer)
    return fail(invalid_input("cannot read the answer file: " + answer.status().message()));

  auto devices = cuda::probe_devices();
  if (!devices) return fail(devices.status());
  auto device = sandbox::resolve_device(config.device, devices->count, devices->reason);
  if (!device) return fail(device.status());
  config.device = *device;
  // One job at a time here: a single worker is enough, and starts faster.
  config.workers = 1;

  auto sandbox = sandbox::SandboxService::start(config);
  if (!sandbox) return fail(sandbox.status().with_context("starting the sandbox"));
  sandbox::VerifyResult r = (*sandbox)->verify(**task, *answer);

  nlohmann::json out;
  out["verdict"] = std::string(sandbox::verdict_name(r.verdict));
  // JSON has no infinity: an error that is not finite (a NaN where a number was due) is null.
  out["max_abs_err"] =
      std::isfinite(r.max_abs_err) ? nlohmann::json(r.max_abs_err) : nlohmann::json(nullptr);
  out["speedup"] = r.speedup ? nlohmann::json(*r.speedup) : nlohmann::json(nullptr);
  out["compile_ms"] = r.compile_ms;
  out["exec_ms"] = r.exec_ms;
  out["feedback"] = r.feedback;
  out["device"] = config.device;
  out["worker"] = (*sandbox)->worker_description();
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace leap::app
