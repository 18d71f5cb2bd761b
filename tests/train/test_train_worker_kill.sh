#!/usr/bin/env bash
# A sandbox worker killed in the middle of a step does not stop `leap train`: the demo policy
# (whose kernels compile and run in the interpreter for a while) trains for 2 steps on 4 ranks
# while this script kill -9s busy workers (state R: idle workers sleep on their socket). The run
# must end normally with every step and every sample in the file, and the killed jobs must have
# been retried: no sample is left with SANDBOX_ERROR.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
setsid "$src/scripts/mpirun_local.sh" 4 "$LEAP" train --config "$src/configs/demo_v1.ini" --model "$src/models/demo" \
  --suite "$src/tasks/level1.jsonl" --train.steps 2 --train.batch_tasks 2 --rl.group_size 8 --rl.max_turns 2 \
  --sampler.max_new_tokens 512 --log.level info --run.out_dir "$tmp/run" >"$tmp/log" 2>&1 &
job=$!
# The ranks' process groups hold their workers; a worker is a `leap worker` whose parent is a rank.
ranks() { pgrep -f -- "--run.out_dir $tmp/run" | grep -v "^$job\$"; }
kills=0
# Polled as fast as pgrep goes (a verification lasts tens of milliseconds), until the run ends or
# 10 minutes pass; 16 answers a step go to the sandbox, so some are caught running.
while [ "$SECONDS" -lt 600 ]; do
  kill -0 "$job" 2>/dev/null || break
  grep -q "training:" "$tmp/log" || { sleep 0.1; continue; }  # workers are busy starting up before
  for rank in $(ranks); do
    for w in $(pgrep -P "$rank" -f "leap worker"); do
      if [ "$(awk '{print $3}' "/proc/$w/stat" 2>/dev/null)" = R ] && [ "$kills" -lt 3 ]; then
        kill -9 "$w" 2>/dev/null && kills=$((kills + 1)) && echo "killed busy worker $w of rank process $rank" && sleep 1
      fi
    done
  done
done
wait "$job"; rc=$?
if [ "$rc" != 0 ]; then echo "FAIL the run stopped (exit $rc)"; tail -20 "$tmp/log"; fail=1; fi
if [ "$kills" = 0 ]; then echo "FAIL no busy worker was seen to kill"; fail=1; fi
/usr/bin/python3 - "$tmp/run/trajectories.h5" "$src" <<'PY' || fail=1
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], "tools"))
from leap_trajectories import load_run
run = load_run(sys.argv[1], with_text=False)
steps = list(run.steps["step"])
errors = int((run.samples["verdict"] == "SANDBOX_ERROR").sum())
first_turn = run.samples[run.samples["turn"] == 1]
if steps != [0, 1] or len(first_turn) != 2 * 2 * 8 or errors:
    sys.exit(f"FAIL steps {steps}, {len(first_turn)} turn-1 samples (wanted 32), {errors} SANDBOX_ERROR")
print(f"ok   run finished: steps {steps}, {len(run.samples)} samples, verdicts "
      f"{dict(run.samples['verdict'].value_counts())}")
PY
[ "$fail" = 0 ] && echo "ok   $kills busy worker(s) killed mid-step; the run went on and their jobs were retried"
exit $fail
