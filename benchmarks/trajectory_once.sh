#!/usr/bin/env bash
# Training a trajectory once against training each turn (rl.train_trajectory_once true / false):
# the demo policy and config with DCP off (every group with a failure gets debugging turns), the
# same seed, so both arms generate the same samples; the arms alternate, REPS times each. Prints,
# per arm, the mean over steps of the trainer's sequences and tokens per step (/steps
# train_sequences, train_positions) and of train_s, and the ratio. Run from the repository root
# after scripts/build.sh:  benchmarks/trajectory_once.sh [STEPS] [REPS]
set -euo pipefail
steps="${1:-3}" reps="${2:-2}"
leap=build/src/apps/leap
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$reps"); do
  for arm in true false; do
    scripts/mpirun_local.sh 1 "$leap" train --config configs/demo_v1.ini --mpi.sandbox_ranks 0 --dcp.mode off \
      --train.steps "$steps" --rl.train_trajectory_once "$arm" --run.out_dir "$tmp/$arm-$r" >"$tmp/$arm-$r.log" 2>&1
  done
done
/usr/bin/python3 - "$tmp" "$reps" <<'PY'
import sys, h5py, numpy as np
tmp, reps = sys.argv[1], int(sys.argv[2])
res = {}
for arm in ("true", "false"):
    seqs, pos, ts = [], [], []
    for r in range(1, reps + 1):
        s = h5py.File(f"{tmp}/{arm}-{r}/trajectories.h5", "r")["steps"][:]
        seqs += list(s["train_sequences"]); pos += list(s["train_positions"]); ts += list(s["train_s"])
    res[arm] = (np.mean(seqs), np.mean(pos), np.mean(ts), np.min(ts), np.max(ts))
    print(f"train_trajectory_once={arm:5s}: {res[arm][0]:.1f} sequences, {res[arm][1]:.0f} tokens, "
          f"train_s mean {res[arm][2]:.2f} (min {res[arm][3]:.2f}, max {res[arm][4]:.2f}) per step")
print(f"tokens per step: once/per-turn = {res['true'][1] / res['false'][1]:.3f}; "
      f"train_s: once/per-turn = {res['true'][2] / res['false'][2]:.3f}")
PY
