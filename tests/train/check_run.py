"""Checks a finished `leap train` run folder as a user would: the HDF5 file read with h5py/pandas
through tools/leap_trajectories.py, and the final checkpoint's files.

usage: check_run.py RUN_DIR STEPS GROUPS_PER_STEP GROUP_SIZE POLICY_RANKS
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

run_dir, steps, groups, group_size, policy_ranks = sys.argv[1], *map(int, sys.argv[2:6])
run = load_run(os.path.join(run_dir, "trajectories.h5"))
errors = []
if list(run.steps["step"]) != list(range(steps)):
    errors.append(f"steps {list(run.steps['step'])}, wanted 0..{steps - 1}")
if (run.steps["n_groups"] != groups).any():
    errors.append(f"n_groups {list(run.steps['n_groups'])}")
turn1 = run.samples[run.samples.turn == 1]
if len(turn1) != steps * groups * group_size:
    errors.append(f"{len(turn1)} turn-1 samples, wanted {steps * groups * group_size}")
if set(run.samples["mpi_rank"]) - set(range(policy_ranks + 4)):
    errors.append(f"mpi_rank values {sorted(set(run.samples['mpi_rank']))}")
if len(set(run.samples["mpi_rank"])) != policy_ranks:
    errors.append(f"samples came from ranks {sorted(set(run.samples['mpi_rank']))}, wanted {policy_ranks} ranks")
if not all(run.samples["prompt"].str.len() > 100):
    errors.append("empty prompts")
if set(run.samples["verdict"]) - {"OK", "FORMAT_ERROR", "COMPILE_ERROR", "LAUNCH_ERROR", "RUNTIME_ERROR", "TIMEOUT",
                                  "WRONG_ANSWER", "MEMORY_VIOLATION", "UNSUPPORTED", "SANDBOX_ERROR"}:
    errors.append(f"verdicts {set(run.samples['verdict'])}")
if "[rl]" not in run.config or "group_size = %d" % group_size not in run.config:
    errors.append("config attribute lacks [rl] group_size")
if (run.steps["n_sandbox_jobs"] != run.samples.groupby("step").size().values).any():
    errors.append("n_sandbox_jobs does not count the samples")
ckpt = os.path.join(run_dir, "checkpoints", "step_%06d" % (steps - 1))
for f in ("model.safetensors", "config.json", "optimizer-rank00000-of-%05d.safetensors" % policy_ranks, "state.json"):
    if not os.path.exists(os.path.join(ckpt, f)):
        errors.append(f"checkpoint lacks {f}")
if os.path.exists(os.path.join(ckpt, "state.json")):
    state = json.load(open(os.path.join(ckpt, "state.json")))
    if state.get("step") != steps - 1 or "dcp" not in state or "task_sampler" not in state:
        errors.append(f"state.json {state}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"ok: {steps} steps, {len(run.samples)} turn-samples from {policy_ranks} policy rank(s)")
