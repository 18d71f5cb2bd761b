#!/usr/bin/env bash
# `leap analyze` and tools/plot_run.py as a user runs them: a short 1-rank run analyzed as JSON
# (every number checked against pandas by check_analyze.py), CSV, text, --last and --output; a run
# analyzed while `leap train` is still writing it (SWMR) shows a prefix of its steps; the plots
# are valid PNGs; bad input (missing file, not HDF5, HDF5 but not a LEAP run, a run with no steps)
# gets the message that names it, and exit code 2 where it is an error.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
source "$src/tests/cli/check_lib.sh"
tmp=$(mktemp -d)
live_pid=""
cleanup() { [ -n "$live_pid" ] && kill -9 -- -"$live_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
py=/usr/bin/python3
mkdir -p "$tmp/model" && cp "$src/tests/train/tiny_config.json" "$tmp/model/config.json"
common=(--suite "$src/tasks/level1.jsonl" --model "$tmp/model" --train.random_init --train.batch_tasks 2
        --rl.group_size 4 --sampler.max_new_tokens 48 --sandbox.device cpu --log.level warn)

# A finished 2-step run of the demo policy (models/demo), which passes some tasks, so that the
# pass rates checked are not all zero.
if ! (cd "$src" && scripts/mpirun_local.sh 1 "$LEAP" train --config configs/demo_v1.ini --mpi.sandbox_ranks 0 \
        --sandbox.workers 1 --train.batch_tasks 2 --rl.group_size 4 --train.steps 2 --log.level warn \
        --output.swmr on --run.out_dir "$tmp/run") >"$tmp/run.log" 2>&1; then
  echo "FAIL the run to analyze did not finish"; tail -20 "$tmp/run.log"; exit 1
fi
h5="$tmp/run/trajectories.h5"
"$LEAP" analyze "$h5" --format json >"$tmp/a.json" && "$LEAP" analyze "$h5" --format csv >"$tmp/steps.csv" &&
  $py "$here/check_analyze.py" "$tmp/a.json" "$h5" --csv "$tmp/steps.csv" && echo "ok   json-and-csv-match-pandas" ||
  { echo "FAIL json/csv"; fail=1; }
"$LEAP" analyze "$h5" --format json --last 1 >"$tmp/last.json" &&
  $py "$here/check_analyze.py" "$tmp/last.json" "$h5" --last 1 && echo "ok   last-1" || { echo "FAIL --last"; fail=1; }
check text-tables 0 "DCP classes \(groups\) and sandbox jobs" -- "$LEAP" analyze "$h5"
check text-has-every-table 0 "token lengths per turn-sample" -- "$LEAP" analyze "$tmp/run"
check csv-other-table 0 "^tokens,count,mean,min,p10" -- "$LEAP" analyze "$h5" --format csv --table tokens
mkdir -p "$tmp/out"
if "$LEAP" analyze "$h5" --format json --output "$tmp/out/a.json" && cmp -s "$tmp/out/a.json" "$tmp/a.json" &&
   [ -z "$(ls "$tmp/out" | grep -v '^a.json$')" ]; then echo "ok   output-file"
else echo "FAIL --output"; fail=1; fi
check output-folder-missing 2 "the folder .*/nowhere does not exist" -- "$LEAP" analyze "$h5" --output "$tmp/nowhere/a.txt"

# A running job: analyze once its first step is committed, while `leap train` still appends.
setsid "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${common[@]}" --output.swmr on --train.steps 200 --run.out_dir "$tmp/live" \
  >"$tmp/live.log" 2>&1 &
live_pid=$!
live="$tmp/live/trajectories.h5"
steps_in() { $py -c "import json; print(json.load(open('$1'))['run']['steps_in_file'])"; }
wait_steps() {  # wait_steps N: until `leap analyze` sees at least N committed steps of the live run (2 minutes at most)
  for _ in $(seq 600); do
    if [ -e "$live" ] && "$LEAP" analyze "$live" --format json --table run >"$tmp/poll.json" 2>/dev/null &&
       [ "$(steps_in "$tmp/poll.json")" -ge "$1" ]; then return 0; fi
    sleep 0.2
  done
  return 1
}
mid=0
if wait_steps 1 && "$LEAP" analyze "$live" --format json >"$tmp/mid.json" && kill -0 "$live_pid" 2>/dev/null; then
  mid=$(steps_in "$tmp/mid.json"); echo "ok   analyzed while the run was writing ($mid steps so far)"
else echo "FAIL analyze of a running job"; tail -5 "$tmp/live.log"; fail=1; fi
# Let it commit at least one more step, so the mid-run view must be a strict prefix, then kill it.
wait_steps $((mid + 1)) || { echo "FAIL the live run stopped committing steps"; fail=1; }
kill -9 -- -"$live_pid" 2>/dev/null; wait "$live_pid" 2>/dev/null; live_pid=""
$py "$here/check_analyze.py" "$tmp/mid.json" "$live" --prefix && echo "ok   mid-run analysis is a prefix of the file" ||
  { echo "FAIL mid-run prefix"; fail=1; }

# A job writing without SWMR holds its file locked: a clear message, exit 2.
setsid "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${common[@]}" --output.swmr off --train.steps 200 \
  --run.out_dir "$tmp/noswmr" >"$tmp/noswmr.log" 2>&1 &
live_pid=$!
for _ in $(seq 600); do [ -s "$tmp/noswmr/trajectories.h5" ] && break; sleep 0.2; done
[ -s "$tmp/noswmr/trajectories.h5" ] || tail -5 "$tmp/noswmr.log"
check running-without-swmr 2 "a writer holds it without SWMR" -- "$LEAP" analyze "$tmp/noswmr"
kill -9 -- -"$live_pid" 2>/dev/null; wait "$live_pid" 2>/dev/null; live_pid=""
check killed-run-readable 0 "steps in file" -- "$LEAP" analyze "$live"

# Plots: five valid PNGs of some size.
if $py "$src/tools/plot_run.py" "$h5" --out "$tmp/plots" >"$tmp/plots.log" 2>&1 &&
   $py "$here/check_pngs.py" "$tmp/plots" pass_rate_vs_step pass_rate_vs_time dcp_fractions verdict_mix token_lengths
then echo "ok   plots"; else echo "FAIL plots"; cat "$tmp/plots.log"; fail=1; fi
check plot-missing-run 2 "does not exist" -- $py "$src/tools/plot_run.py" "$tmp/nothing.h5" --out "$tmp/p2"

# Bad input.
check missing-file 2 "nothing.h5' does not exist: pass the trajectories.h5" -- "$LEAP" analyze "$tmp/nothing.h5"
check folder-without-run 2 "is a folder without trajectories.h5" -- "$LEAP" analyze "$tmp/model"
check no-file-given 2 "no run given" -- "$LEAP" analyze
echo "not hdf5" >"$tmp/text.h5"
check not-hdf5 2 "text.h5' is not an HDF5 file" -- "$LEAP" analyze "$tmp/text.h5"
$py - "$tmp" "$h5" <<'PY'
import shutil, sys
import h5py
import numpy as np
tmp, run = sys.argv[1], sys.argv[2]
with h5py.File(tmp + "/other.h5", "w") as f:
    f.create_dataset("x", data=np.arange(3))
shutil.copy(run, tmp + "/nofield.h5")
with h5py.File(tmp + "/nofield.h5", "r+") as f:
    steps = f["steps"][...]
    keep = [n for n in steps.dtype.names if n != "pass_final"]
    del f["steps"]
    f.create_dataset("steps", data=np.array([tuple(r[n] for n in keep) for r in steps],
                                            dtype=[(n, steps.dtype[n]) for n in keep]))
shutil.copy(run, tmp + "/empty.h5")
with h5py.File(tmp + "/empty.h5", "r+") as f:
    f["steps"].resize((0,))
    f["samples"].resize((0,))
PY
check not-leap 2 "other.h5' is an HDF5 file but not a LEAP trajectory file \(it lacks root attribute schema_version, dataset /steps, dataset /samples" -- "$LEAP" analyze "$tmp/other.h5"
check missing-field 2 "lacks /steps field pass_final" -- "$LEAP" analyze "$tmp/nofield.h5"
check zero-steps 0 "no steps written yet" -- "$LEAP" analyze "$tmp/empty.h5"
check zero-steps-json 0 '"steps_in_file": 0' -- "$LEAP" analyze "$tmp/empty.h5" --format json
check zero-steps-json-tables 0 '"steps": \[\]' -- "$LEAP" analyze "$tmp/empty.h5" --format json
check zero-steps-csv 0 '^step,' -- "$LEAP" analyze "$tmp/empty.h5" --format csv
# Rows a reader sees before their data (a running job's extended datasets read as zeros), and a
# step with no sample rows (every prompt stopped before turn 1): leap analyze and the Python
# loader keep the same committed steps, by one rule.
$py - "$tmp" "$h5" <<'PY'
import shutil, sys
import h5py
tmp, run = sys.argv[1], sys.argv[2]
shutil.copy(run, tmp + "/extended.h5")
with h5py.File(tmp + "/extended.h5", "r+") as f:
    f["steps"].resize((f["steps"].shape[0] + 1,))
    f["samples"].resize((f["samples"].shape[0] + 3,))
shutil.copy(run, tmp + "/nosamples.h5")
with h5py.File(tmp + "/nosamples.h5", "r+") as f:
    steps = f["steps"][...]
    keep = int(steps["n_samples"][0])
    steps["n_samples"][1] = 0
    f["steps"][...] = steps
    f["samples"].resize((keep,))
    for col in ("prompt", "completion", "feedback"):
        f["text/" + col + "/offsets"].resize((keep,))
PY
check extended-rows 0 '"steps_in_file":2,.*"steps_pending":1,' -- bash -c "'$LEAP' analyze '$tmp/extended.h5' --format json | tr -d '\n '"
check step-without-samples 0 '"steps_in_file":2,.*"steps_pending":0,' -- bash -c "'$LEAP' analyze '$tmp/nosamples.h5' --format json | tr -d '\n '"
check python-loader-committed-rows 0 "steps 2 2 samples" -- $py -c '
import sys; sys.path.insert(0, sys.argv[1])
from leap_trajectories import load_run
full, ext, none = (load_run(p) for p in sys.argv[2:5])
assert len(ext.samples) == len(full.samples) and list(ext.steps["step"]) == [0, 1], (len(ext.samples), list(ext.steps["step"]))
assert list(none.steps["step"]) == [0, 1] and (none.samples["step"] == 0).all(), list(none.steps["step"])
print("steps", len(ext.steps), len(none.steps), "samples", len(ext.samples), len(none.samples))' \
  "$src/tools" "$h5" "$tmp/extended.h5" "$tmp/nosamples.h5"
check bad-format 2 "analyze.format" -- "$LEAP" analyze "$h5" --format xml
check bad-last 2 "analyze.last" -- "$LEAP" analyze "$h5" --last -1

[ "$fail" = 0 ] && echo "all analyze CLI checks passed"
exit $fail
