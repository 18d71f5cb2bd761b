// The [train] and [output] sections.
#include "apps/train_options.h"

namespace leap::app {

void TrainOptions::declare(OptionSet& opts) {
  opts.add("train.mode", &mode, std::string("rl"),
           "rl: multi-turn GRPO with DCP; sft: cross-entropy on the suite's reference answers (warm start).",
           {.choices = {"rl", "sft"}, .alias = "mode"});
  opts.add("train.steps", &steps, 10, "Optimizer steps (RL steps in rl mode).", {.min = 0});
  opts.add("train.batch_tasks", &batch_tasks, 4, "B: tasks (groups of rl.group_size samples) per RL step.",
           {.min = 1});
  opts.add("train.micro_batch_seqs", &micro_batch_seqs, 8,
           "Sequences per forward/backward on a rank; gradients accumulate over micro-batches.", {.min = 1});
  opts.add("train.activation_checkpointing", &activation_checkpointing, false,
           "Keep only each layer's input in the forward and compute the layer again in the backward: "
           "activations of one layer instead of all (see `leap plan`), for one more forward.");
  opts.add("train.checkpoint_every", &checkpoint_every, 25,
           "Write a checkpoint every N steps (RL or SFT steps), and always after the last (0: no step rule).",
           {.min = 0});
  opts.add("train.checkpoint_minutes", &checkpoint_minutes, 30.0,
           "Also write one when this many minutes have passed since the last (0: no time rule): a crash "
           "loses at most this much, plus the step in flight.",
           {.min = 0.0});
  opts.add("train.keep_checkpoints", &keep_checkpoints, 3, "Newest checkpoints kept in RUN/checkpoints.", {.min = 1});
  opts.add("train.check_replicas_every", &check_replicas_every, 0,
           "Debug: compare a checksum of the parameters across policy ranks every N steps; a mismatch is "
           "fatal and names the ranks (0: never).",
           {.min = 0});
  opts.add("train.random_init", &random_init, false,
           "Initialise the policy randomly from model.path/config.json instead of loading its weights.");
  opts.add("train.resume", &resume, std::string(""),
           "Continue a run: 'latest' (the newest complete checkpoint in run.out_dir), 'auto' (latest if the run "
           "has a checkpoint, else start fresh: what a requeued job runs) or a checkpoint folder. --resume alone "
           "means latest.",
           {.alias = "resume", .bare = "latest"});
  opts.add("output.swmr", &swmr, std::string("auto"),
           "HDF5 single-writer/multiple-reader mode, so h5py can read a running job: auto (on for local file "
           "systems, Lustre and GPFS; off on NFS, BeeGFS, SMB and FUSE mounts), on, off.",
           {.choices = {"auto", "on", "off"}});
}

}  // namespace leap::app
