// Composition of the module option sections into the one OptionSet of the `leap` command.
#include "apps/app_options.h"

namespace leap::app {

void RunOptions::declare(OptionSet& opts) {
  opts.add("run.seed", &seed, int64_t{1234}, "Seed of every random stream of the run (tasks, sampling, inputs).");
  opts.add("run.out_dir", &out_dir, std::string("runs/leap"),
           "Run folder: trajectories (HDF5), checkpoints and logs go here.");
  opts.add("log.level", &log_level, std::string("info"), "Log level.",
           {.choices = {"debug", "info", "warn", "error", "quiet"}});
  opts.add("log.all_ranks", &log_all_ranks, false, "Log from every rank, not only rank 0.");
  declare_backend_name(opts, &backend);
  opts.add("backend.threads", &threads, 0,
           "CPU threads per rank for the CPU backend; 0 = the physical cores the rank is bound to "
           "(unbound: SLURM_CPUS_PER_TASK, else the node's cores divided by its ranks).",
           {.min = 0, .max = 1024});
  opts.add("backend.nccl_timeout_s", &nccl_timeout_s, 600.0,
           "cuda: seconds a gradient all-reduce (or NCCL setup) may take before the communicator "
           "is aborted and the run stops with an error, instead of hanging on a dead rank.",
           {.min = 1, .max = 86400});
}

void declare_backend_name(OptionSet& opts, std::string* name) {
  opts.add("backend.name", name, std::string("cpu"),
           "Policy backend: cpu (fp32, OpenBLAS; the reference) or cuda (bf16, cuBLASLt). The "
           "gradient reduction follows it: MPI on cpu, NCCL on cuda.",
           {.choices = {"cpu", "cuda"}});
}

void AppOptions::declare(OptionSet& opts) {
  run.declare(opts);
  mpi.declare(opts);
}

}  // namespace leap::app
