// `leap layout`: where every rank of a job would go, without starting it or needing a GPU: the
// node, local rank, role, the GPU it drives (for a sandbox rank, the GPU its workers time
// kernels on, or none) and the CPU package it is bound to. It calls place_ranks, the function
// make_topology calls at start-up, so what it prints is what runs. It reads the same config as
// `leap train` (mpi.*, sandbox.device, backend.name) plus the job's shape.
#include <cstdio>

#include "apps/subcommands.h"
#include "apps/train_config.h"
#include "mpi/placement.h"

namespace leap::app {

namespace {

struct LayoutOptions {
  int nodes = 1;
  int gpus_per_node = 8;
  int ranks_per_node = 8;
  int packages_per_node = 2;
  int cpus_per_rank = 0;
  std::string format = "table";
  void declare(OptionSet& o) {
    o.add("layout.nodes", &nodes, 1, "Nodes of the job (sbatch --nodes).", {.min = 1, .max = 100000, .alias = "nodes"});
    o.add("layout.gpus_per_node", &gpus_per_node, 8, "GPUs each node has (--gpus-per-node).",
          {.min = 0, .max = 64, .alias = "gpus-per-node"});
    o.add("layout.ranks_per_node", &ranks_per_node, 8, "MPI ranks per node (--ntasks-per-node).",
          {.min = 1, .max = 4096, .alias = "ranks-per-node"});
    o.add("layout.packages_per_node", &packages_per_node, 2,
          "CPU packages (sockets) per node; ranks are bound package by package.",
          {.min = 0, .max = 64, .alias = "packages-per-node"});
    o.add("layout.cpus_per_rank", &cpus_per_rank, 0, "Cores per rank (--cpus-per-task); 0: not shown.",
          {.min = 0, .alias = "cpus-per-rank"});
    o.add("layout.format", &format, std::string("table"), "table or json.",
          {.choices = {"table", "json"}, .alias = "format"});
  }
};

}  // namespace

int run_layout(const std::vector<std::string>& args) {
  OptionSet opts;
  TrainConfig c;
  c.declare(opts);
  LayoutOptions l;
  l.declare(opts);
  constexpr const char* kUsage =
      "[--config FILE.ini] --nodes N --gpus-per-node G --ranks-per-node R [--format table|json]";
  if (int rc = parse_or_exit("layout", kUsage, args, opts); rc >= 0) return rc;
  mpi::PlacementInput in;
  for (int n = 0; n < l.nodes; ++n) {
    for (int r = 0; r < l.ranks_per_node; ++r) {
      in.node.push_back(n);
      in.local_rank.push_back(r);
      in.local_size.push_back(l.ranks_per_node);
    }
  }
  in.gpus_per_node = l.gpus_per_node;
  in.policy_on_gpu = c.app.run.backend == "cuda";
  in.config = c.app.mpi;
  in.config.sandbox_device = c.sandbox.device;
  in.packages_per_node = l.packages_per_node;
  in.cpus_per_rank = l.cpus_per_rank;
  auto placed = mpi::place_ranks(in);
  if (!placed) return report_error("layout", placed.status());
  const std::string out = l.format == "json" ? mpi::format_placement_json(in, *placed)
                                             : mpi::format_placement_table(in, *placed);
  std::fputs(out.c_str(), stdout);
  for (const auto& w : mpi::shared_gpu_warnings(in, *placed)) std::fprintf(stderr, "leap layout: warning: %s\n", w.c_str());
  return 0;
}

}  // namespace leap::app
