// Every option of the `leap` command, gathered from the modules that own them. Each module
// declares its own section once (TopologyConfig::declare, ...); this file only composes them,
// so `leap --help`, `--print-config` and the parser share one declaration per option.
#pragma once

#include <string>

#include "common/config.h"
#include "common/log.h"
#include "mpi/topology.h"

namespace leap::app {

struct RunOptions {
  int64_t seed = 0;
  std::string out_dir;
  std::string log_level = "info";
  bool log_all_ranks = false;
  std::string backend = "cpu";
  int threads = 0;
  double nccl_timeout_s = 600;
  void declare(OptionSet& opts);
};

// `backend.name`, declared once for every command that runs the policy (train, score).
void declare_backend_name(OptionSet& opts, std::string* name);

struct AppOptions {
  RunOptions run;
  mpi::TopologyConfig mpi;
  void declare(OptionSet& opts);
};

}  // namespace leap::app
