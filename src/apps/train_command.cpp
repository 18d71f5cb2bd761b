// `leap train`: starts MPI, lays out the ranks, and runs the training loop.
#include <mpi.h>

#include <cstdio>

#include "apps/app_options.h"
#include "apps/subcommands.h"
#include "common/check.h"
#include "cuda/device_probe.h"

namespace leap::app {

int run_train(const std::vector<std::string>& args) {
  OptionSet opts;
  AppOptions o;
  o.declare(opts);
  // Options are parsed before MPI starts, on every rank alike: a bad config exits 2 everywhere
  // without any collective, and nothing has been written.
  if (int rc = parse_or_exit("train", "[--config FILE.ini] [--section.key=value ...]", args, opts); rc >= 0)
    return rc;

  MPI_CHECK(MPI_Init(nullptr, nullptr));
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  LogLevel level = LogLevel::kInfo;
  parse_log_level(o.run.log_level, &level);
  Logger log(world_rank, o.run.log_all_ranks, level);

  auto dev = cuda::probe_devices();
  if (!dev) {
    log.error("{}", dev.status().message());
    MPI_Finalize();
    return dev.status().exit_code();
  }
  log.info("{}", cuda::describe(*dev));
  auto topo = mpi::make_topology(MPI_COMM_WORLD, o.mpi, dev->count, o.run.backend == "cuda");
  if (!topo) {
    log.error("{}", topo.status().message());
    MPI_Finalize();
    return topo.status().exit_code();
  }
  log.info("{}", mpi::format_layout(*topo));
  log.error("the training loop is not built yet in this version of leap");
  mpi::free_topology(&*topo);
  MPI_Finalize();
  return 2;
}

}  // namespace leap::app
