#!/usr/bin/env bash
# Operations on a run, as a cluster job meets them: a graceful stop on SIGUSR1 (what Slurm's early
# signal becomes after the jobscript forwards it to mpirun) checkpoints the step in flight and
# exits 75 (stopped early, resumable: what the jobscripts requeue on); `--resume auto` continues it to the same trajectories and parameters as a run that was
# never stopped; auto on a run without a checkpoint starts over and keeps the old file aside;
# auto on a finished run does nothing; a corrupt or foreign checkpoint, or a trajectory file of
# another run, is refused with exit 2 and leaves every file of the run as it was.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
source "$src/tests/cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/model" && cp "$here/tiny_config.json" "$tmp/model/config.json"
base=(--config "$src/configs/demo_v1.ini" --suite "$src/tasks/level1.jsonl" --train.random_init
      --train.batch_tasks 2 --rl.group_size 4 --sampler.max_new_tokens 48 --sandbox.device cpu --log.level info
      --train.checkpoint_every 1 --rl.pipeline sync)  # sync: the runs are compared exactly
opts=("${base[@]}" --model "$tmp/model")
# train NP ARGS...: 4 ranks are demo_v1.ini's 2 policy + 2 sandbox; 1 rank verifies in-process.
train() {
  local np="$1"; shift
  if [ "$np" = 1 ]; then "$src/scripts/mpirun_local.sh" 1 "$@" --mpi.sandbox_ranks 0
  else "$src/scripts/mpirun_local.sh" "$np" "$@"; fi
}
digest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

check straight 0 "summary after 4 steps" -- train 4 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/straight"

# ---- graceful stop on SIGUSR1, sent to mpirun as the jobscripts do ------------------------------
setsid "$src/scripts/mpirun_local.sh" 4 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/stopped" >"$tmp/stop.log" 2>&1 &
job=$!
for _ in $(seq 600); do [ -e "$tmp/stopped/checkpoints/step_000000/state.json" ] && break; sleep 0.1; done
kill -USR1 "$job"
wait "$job"; rc=$?
if [ "$rc" = 75 ] && grep -Eq "stopped by SIGUSR1 after step [0-2]:" "$tmp/stop.log" &&
   [ ! -e "$tmp/stopped/checkpoints/step_000003" ]; then
  echo "ok   usr1-stops-at-step-boundary ($(grep -o 'after step [0-9]*' "$tmp/stop.log"))"
elif [ -e "$tmp/stopped/checkpoints/step_000003" ]; then
  echo "FAIL usr1: the run finished before the signal took effect"; tail -5 "$tmp/stop.log"; fail=1
else
  echo "FAIL usr1 (exit $rc)"; tail -20 "$tmp/stop.log"; fail=1
fi
stopped_at=$(grep -o 'after step [0-9]*' "$tmp/stop.log" | grep -o '[0-9]*$')
# The stopped run's file holds exactly the steps up to its checkpoint.
/usr/bin/python3 - "$tmp/stopped/trajectories.h5" "${stopped_at:-x}" <<'PY' && echo "ok   usr1-file-flushed" || fail=1
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    steps = list(f["steps"]["step"])
want = list(range(int(sys.argv[2]) + 1))
if steps != want:
    sys.exit(f"FAIL usr1-file: steps {steps}, wanted {want}")
PY
# The resumed run counts steps within the whole run: its last progress line is step 4/4.
check resume-auto 0 "step 4/4 \|" -- \
  train 4 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/stopped" --resume auto
/usr/bin/python3 "$here/compare_runs.py" "$tmp/straight" "$tmp/stopped" || fail=1
check resume-auto-complete 0 "already complete" -- \
  train 1 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/straight" --resume auto

# ---- --resume auto where no checkpoint exists yet: a fresh start; the old file is kept aside ---
check auto-fresh 0 "summary after 4 steps" -- train 1 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/fresh" --resume auto
rm -rf "$tmp/fresh/checkpoints"
check auto-restart 0 "no checkpoint to resume from: starting over" -- \
  train 1 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/fresh" --resume auto
if [ -s "$tmp/fresh/trajectories.h5.unresumable" ] && [ -s "$tmp/fresh/trajectories.h5" ]; then echo "ok   auto-restart-kept-old-file"
else echo "FAIL auto-restart: files $(ls "$tmp/fresh")"; fail=1; fi

# ---- bad checkpoints and foreign files: exit 2, a message naming the file, nothing changed ----
bad() {  # bad NAME REGEX MUTATION [extra options]: copy the straight run, damage it, resume
  local name="$1" regex="$2" mutation="$3"; shift 3
  rm -rf "$tmp/bad" && cp -r "$tmp/straight" "$tmp/bad"
  local ck="$tmp/bad/checkpoints/step_000003"
  (cd "$ck" && eval "$mutation")
  local before; before=$(digest "$tmp/bad")
  check "$name" 2 "$regex" -- train 1 "$LEAP" train "${base[@]}" --train.steps 6 --run.out_dir "$tmp/bad" --resume latest \
    --model "${model:-$tmp/model}" "$@"
  if [ "$(digest "$tmp/bad")" != "$before" ]; then echo "FAIL $name: the run folder was changed"; fail=1; fi
}
bad truncated-model "model.safetensors" 'head -c 100 model.safetensors > t && mv t model.safetensors'
bad corrupt-model-header "model.safetensors" 'printf "\x10\x00\x00\x00\x00\x00\x00\x00{not json!!!!!!!}" > model.safetensors'
bad corrupt-config "config.json" 'echo "{ broken" > config.json'
bad truncated-rank-state "optimizer-rank00000-of-0000[0-9].safetensors" 'f=$(ls optimizer-rank00000-*); head -c 300 $f > t && mv t $f'
bad missing-rank-state "optimizer-rank.*the checkpoint is incomplete" 'rm optimizer-rank00000-*'
bad corrupt-state "state.json" 'echo "[1, 2" > state.json'
bad state-without-step "state.json" 'echo "{}" > state.json'
# A checkpoint of another model shape: the config in the run's model folder differs.
sed 's/"hidden_size": *[0-9]*/"hidden_size": 48/' "$here/tiny_config.json" > "$tmp/wide_config.json"
mkdir -p "$tmp/wide" && cp "$tmp/wide_config.json" "$tmp/wide/config.json"
model="$tmp/wide" bad other-shape "model.safetensors|config.json|shape" ':'
# Another seed than the checkpoint's: refused, naming the seed to resume with.
bad other-seed "the checkpoint's run has run.seed = [0-9]*, this one 99: resume with --run.seed" ':' --run.seed 99
# The trajectory file of another run (its fingerprint says another batch of tasks a step):
# refused by its fingerprint.
bad foreign-trajectories "belongs to another run" '/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File(\"../../trajectories.h5\", \"r+\") as f:
    f.attrs[\"run_fingerprint\"] = np.bytes_(f.attrs[\"run_fingerprint\"].replace(b\"B=2\", b\"B=3\"))"'
check resume-nothing-folder 2 "not a checkpoint folder" -- \
  train 1 "$LEAP" train "${opts[@]}" --train.steps 4 --run.out_dir "$tmp/straight" --resume "$tmp/nowhere"

[ "$fail" = 0 ] && echo "all stop/resume checks passed"
exit $fail
