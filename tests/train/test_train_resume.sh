#!/usr/bin/env bash
# Crash and resume with real updates. The demo policy (whose samples pass, fail and differ in
# length, so advantages are not zero and AdamW steps) trains 3 RL steps with the KL term on, on 4
# ranks (2 policy, 2 sandbox): once straight through, once killed with SIGKILL (every rank and
# worker) after its first checkpoint and resumed with --resume latest. The two must match in
# the checkpoint's files (the bf16 export, each rank's fp32 weights and moments), state.json and every /steps and /samples column but
# the wall-clock ones, and the weights must have moved. The KL column is 0 at the first update
# (the policy is still its reference) and positive after; a resume against another reference is
# refused. These use rl.pipeline = sync, the mode for exact reproducibility; a streaming run
# resumes at a step boundary with every step once, and resumed from an earlier checkpoint sets the
# later ones aside (abandoned_step_N). Dynamic sampling is on (rl.resample_zero_variance), so its extra draws must resume
# too, and some step must have made one. With rl.rollout_ahead (the next step's tasks drawn during
# a step), a run resumed from an earlier checkpoint draws the same tasks for the later steps. SFT: a run continued from its checkpoint ends with the
# same model and optimizer as a run that went straight through, and checkpoints every
# train.checkpoint_every steps; a SIGUSR1 stops it at a step boundary with a checkpoint, exit 75.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
source "$src/tests/cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Three elementwise tasks the demo policy passes some of the time: every step's groups mix passes and
# failures, so every step trains.
grep -E '"id": "L1/(relu|silu|f32_to_f16)"' "$src/tasks/level1.jsonl" > "$tmp/three.jsonl"
rl_base=(--config "$src/configs/demo_v1.ini" --model "$src/models/demo" --suite "$tmp/three.jsonl" --train.batch_tasks 2 --rl.group_size 4 --rl.max_turns 2 --sampler.max_new_tokens 384 --optim.lr 1e-4
    --rl.kl_beta 0.05 --train.checkpoint_every 1 --log.level info)
rl=("${rl_base[@]}" --rl.resample_zero_variance true)
# The exact comparison is the synchronous pipeline's promise; the streaming one's resume is below.
rl_sync=("${rl[@]}" --rl.pipeline sync)
run() {  # run NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  if "$src/scripts/mpirun_local.sh" "$np" "$LEAP" train "$@" >"$tmp/$name.log" 2>&1; then echo "ok   $name"
  else echo "FAIL $name"; tail -20 "$tmp/$name.log"; fail=1; fi
}

# ---- RL: straight, then killed and resumed ------------------------------------------------------
run rl-straight 4 "${rl_sync[@]}" --train.steps 3 --run.out_dir "$tmp/straight"
setsid "$src/scripts/mpirun_local.sh" 4 "$LEAP" train "${rl_sync[@]}" --train.steps 3 --run.out_dir "$tmp/crash" >"$tmp/crash.log" 2>&1 &
pid=$!
for _ in $(seq 3000); do [ -e "$tmp/crash/checkpoints/step_000000/state.json" ] && break; sleep 0.1; done
kill -9 -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null
if [ -e "$tmp/crash/checkpoints/step_000002" ] || [ ! -e "$tmp/crash/checkpoints/step_000000" ]; then
  echo "FAIL the kill did not land between the first checkpoint and the end: $(ls "$tmp/crash/checkpoints" 2>&1)"; fail=1
else echo "ok   killed with SIGKILL after checkpoint $(ls "$tmp/crash/checkpoints" | tail -1)"; fi
run rl-resumed 4 "${rl_sync[@]}" --train.steps 3 --run.out_dir "$tmp/crash" --resume latest
grep -q "resuming from .*step_00000[01]" "$tmp/rl-resumed.log" || { echo "FAIL the resumed run did not say where it resumed"; fail=1; }
# The line after each checkpoint says where, how big, how long and by how many policy ranks.
grep -Eq "checkpoint .*/step_000002 \([0-9]+ files, [0-9.]+ MB\) written in [0-9.]+ s by 2 policy rank\(s\)" "$tmp/rl-straight.log" \
  || { echo "FAIL no rl checkpoint line: $(grep checkpoint "$tmp/rl-straight.log" | tail -2)"; fail=1; }
/usr/bin/python3 "$here/compare_runs.py" "$tmp/straight" "$tmp/crash" || fail=1
/usr/bin/python3 "$here/weights_moved.py" "$src/models/demo" "$tmp/straight/checkpoints/step_000002" || fail=1
/usr/bin/python3 - "$tmp/straight" "$src/models/demo" <<'PY' || fail=1
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[2]), "..", "tools"))
from leap_trajectories import load_run
run = load_run(os.path.join(sys.argv[1], "trajectories.h5"))
kl = list(run.steps["kl"])
trained = list(run.steps["n_dropped_groups"] < run.steps["n_groups"])
errors = []
if (run.samples["advantage"] == 0).all():
    errors.append("every advantage is zero: nothing trained")
# 0 at the first update (the policy is its reference), > 0 at every later step that trained.
if not trained[0] or kl[0] != 0.0 or not any(trained[1:]) or not all(k > 0 for k, t in zip(kl[1:], trained[1:]) if t):
    errors.append(f"kl per step {kl} (trained {trained}): wanted 0 at the first update, then > 0")
state = json.load(open(os.path.join(sys.argv[1], "checkpoints", "step_000002", "state.json")))
ref = state.get("kl_reference", {})
if not ref.get("path", "").endswith("models/demo") or len(ref.get("hash", "")) != 16:
    errors.append(f"state.json kl_reference {ref}")
resampled = list(run.steps["n_resampled"])
if sum(resampled) == 0 or any(run.steps["n_groups"] != 2 + run.steps["n_resampled"]):
    errors.append(f"dynamic sampling: n_resampled {resampled}, n_groups {list(run.steps['n_groups'])}")
if errors:
    sys.exit("FAIL " + "; ".join(errors))
print(f"ok   resampled groups per step {resampled}")
print(f"ok   kl per step {[f'{k:.3g}' for k in kl]}, reference {ref['hash']}; "
      f"{(run.samples['advantage'] != 0).sum()} of {len(run.samples)} samples with an advantage")
PY
# Resuming against other reference weights is refused before anything changes.
check kl-reference-mismatch 2 "trained with the KL reference .* this run's reference is" -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${rl_sync[@]}" --mpi.sandbox_ranks 0 --train.steps 4 \
  --run.out_dir "$tmp/straight" --resume latest --rl.kl_reference "$tmp/straight/checkpoints/step_000001"

# ---- The KL reference in bf16 (the CUDA default) on the CPU: its matrices rounded, so the KL at the
# first update is above 0 but small; its hash is that of the rounded weights, so resuming with an
# fp32 reference is refused.
run rl-kl-bf16 4 "${rl_sync[@]}" --rl.kl_reference_dtype bf16 --train.steps 2 --run.out_dir "$tmp/klbf16"
grep -Eq "KL to the reference .*one more copy of the weights \(bf16, [0-9.]+ MiB a policy rank\)" "$tmp/rl-kl-bf16.log" \
  && echo "ok   the log names the bf16 reference and its size" \
  || { echo "FAIL no bf16 reference line: $(grep 'KL to' "$tmp/rl-kl-bf16.log")"; fail=1; }
/usr/bin/python3 - "$tmp/klbf16" "$tmp/straight" "$src/tools" <<'PY' || fail=1
import json, os, sys
sys.path.insert(0, sys.argv[3])
from leap_trajectories import load_run
kl = list(load_run(os.path.join(sys.argv[1], "trajectories.h5")).steps["kl"])
ref = [json.load(open(os.path.join(d, "checkpoints", "step_000001", "state.json")))["kl_reference"]["hash"]
       for d in sys.argv[1:3]]
if not 0 < kl[0] < 1e-3 or ref[0] == ref[1]:
    sys.exit(f"FAIL bf16 reference: kl at the first update {kl[0]} (wanted in (0, 1e-3)), hashes {ref}")
print(f"ok   bf16 reference: kl at the first update {kl[0]:.3g}, hash {ref[0]} (fp32: {ref[1]})")
PY
check kl-reference-dtype-mismatch 2 "kept in bf16 .* this run keeps it in fp32 .*--rl.kl_reference_dtype bf16" -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${rl_sync[@]}" --mpi.sandbox_ranks 0 --train.steps 3 \
  --run.out_dir "$tmp/klbf16" --resume latest --rl.kl_reference_dtype fp32

# ---- RL, streaming pipeline: resumes at a step boundary, every step once ---------------------------
run rl-stream-first 4 "${rl[@]}" --rl.pipeline stream --train.steps 2 --run.out_dir "$tmp/stream"
run rl-stream-resumed 4 "${rl[@]}" --rl.pipeline stream --train.steps 3 --run.out_dir "$tmp/stream" --resume latest
grep -q "resuming from .*step_000001" "$tmp/rl-stream-resumed.log" || { echo "FAIL the streaming run did not resume from step 1"; fail=1; }
/usr/bin/python3 - "$tmp/stream" "$src/tools" <<'PY' || fail=1
import os, sys
sys.path.insert(0, sys.argv[2])
from leap_trajectories import load_run
run = load_run(os.path.join(sys.argv[1], "trajectories.h5"))
steps, samples = list(run.steps["step"]), run.samples
errors = []
if steps != [0, 1, 2]:
    errors.append(f"steps {steps}, wanted [0, 1, 2] once each")
if sorted(samples["step"].unique()) != [0, 1, 2] or (samples.groupby("step").size() != run.steps.set_index("step")["n_samples"]).any():
    errors.append("samples do not match their steps' n_samples")
if not ((run.steps["policy_busy_s"] > 0) & (run.steps["sandbox_busy_s"] > 0)).all():
    errors.append("a streaming step without busy time accounted")
if errors:
    sys.exit("FAIL " + "; ".join(errors))
print("ok   streaming run resumed: steps [0, 1, 2], each once, with their samples")
PY
# ---- --resume DIR of an earlier checkpoint: a new branch, the later checkpoints set aside -----------
# Refused first (another suite: the trajectory file belongs to another run), after the later
# checkpoints went aside: they come back, and the file is as it was.
cp "$tmp/three.jsonl" "$tmp/four.jsonl"; grep '"id": "L1/sigmoid"' "$src/tasks/level1.jsonl" >> "$tmp/four.jsonl"
ck="$tmp/stream/checkpoints"
check rl-branch-refused 2 "the resume was refused: the later checkpoints are back in place" -- \
  "$src/scripts/mpirun_local.sh" 4 "$LEAP" train "${rl[@]//three.jsonl/four.jsonl}" --rl.pipeline stream --train.steps 3 \
  --run.out_dir "$tmp/stream" --resume "$ck/step_000000"
if [ -e "$ck/step_000001/state.json" ] && [ -e "$ck/step_000002/state.json" ] && [ ! -e "$ck/abandoned_step_000001" ]; then
  echo "ok   the refused branch brought steps 1 and 2 back"
else echo "FAIL after the refused branch: $(ls "$ck" | tr '\n' ' ')"; fail=1; fi
run rl-branch 4 "${rl[@]}" --rl.pipeline stream --train.steps 3 --run.out_dir "$tmp/stream" \
  --resume "$tmp/stream/checkpoints/step_000000"
if grep -q "moved a later checkpoint aside as .*abandoned_step_000002" "$tmp/rl-branch.log" &&
   [ -e "$ck/abandoned_step_000001/state.json" ] && [ -e "$ck/step_000002/state.json" ] &&
   grep -q '"step": 2' "$ck/step_000002/state.json"; then
  echo "ok   a resumed branch set steps 1 and 2 aside and wrote its own"
else
  echo "FAIL the branch from step 0: $(ls "$ck" | tr '\n' ' ')"; grep -i "aside\|resum" "$tmp/rl-branch.log"; fail=1
fi

# ---- RL, streaming with rl.rollout_ahead: a checkpoint records the task sampler between steps ----
# Every step but the last draws the next step's tasks during its own (to start its turn 1), so a
# checkpoint must record the sampler as it was before that draw: resumed from step 0's checkpoint,
# steps 1 and 2 must get the tasks they got in the run that went straight through.
ahead=("${rl_base[@]}" --rl.pipeline stream --rl.rollout_ahead true --train.steps 3)
tasks_of() {  # tasks_of RUN_DIR OUT: the task of each (step, group), in order
  /usr/bin/python3 - "$1" "$src/tools" > "$2" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[2])
from leap_trajectories import load_run
s = load_run(os.path.join(sys.argv[1], "trajectories.h5"), with_text=False).samples
print(s[s["turn"] == 1].groupby(["step", "group"])["task"].first().to_string())
PY
}
run rl-ahead-straight 4 "${ahead[@]}" --run.out_dir "$tmp/ahead"
tasks_of "$tmp/ahead" "$tmp/ahead-straight.tasks"
run rl-ahead-branch 4 "${ahead[@]}" --run.out_dir "$tmp/ahead" --resume "$tmp/ahead/checkpoints/step_000000"
tasks_of "$tmp/ahead" "$tmp/ahead-branch.tasks"
if [ "$(grep -c . "$tmp/ahead-straight.tasks")" -ge 6 ] && cmp -s "$tmp/ahead-straight.tasks" "$tmp/ahead-branch.tasks"; then
  echo "ok   rollout_ahead: resumed from step 0, steps 1 and 2 drew the same tasks ($(grep -o "turn-1 samples from the step before" "$tmp/rl-ahead-straight.log" | wc -l) step(s) started a step ahead)"
else
  echo "FAIL rollout_ahead: the tasks differ after the resume"; diff "$tmp/ahead-straight.tasks" "$tmp/ahead-branch.tasks"; fail=1
fi

# ---- SFT: checkpoints as it goes; a continued run equals a straight one ------------------------
head -n 2 "$src/tasks/level1.jsonl" > "$tmp/two.jsonl"
mkdir -p "$tmp/tiny" && cp "$here/tiny_config.json" "$tmp/tiny/config.json"
sft=(--suite "$tmp/two.jsonl" --model "$tmp/tiny" --train.random_init --sft.batch_seqs 4 --sft.augment 1
     --mpi.sandbox_ranks 1 --sandbox.device cpu --train.checkpoint_every 2 --log.level info)
run sft-straight 3 --mode sft "${sft[@]}" --train.steps 6 --run.out_dir "$tmp/sft-a"
run sft-first-half 3 --mode sft "${sft[@]}" --train.steps 3 --run.out_dir "$tmp/sft-b"
run sft-continued 3 --mode sft "${sft[@]}" --train.steps 6 --run.out_dir "$tmp/sft-b" --resume latest
ls "$tmp/sft-a/checkpoints" | tr '\n' ' ' | grep -q "^step_000001 step_000003 step_000005 $" \
  && echo "ok   sft checkpoints every 2 steps" || { echo "FAIL sft checkpoints: $(ls "$tmp/sft-a/checkpoints")"; fail=1; }
grep -q '"data_order"' "$tmp/sft-a/checkpoints/step_000005/state.json" || { echo "FAIL sft state.json lacks data_order"; fail=1; }
grep -Eq "checkpoint .*/step_000005 \(5 files, [0-9.]+ MB\) written in [0-9.]+ s by 2 policy rank\(s\)" "$tmp/sft-straight.log" \
  || { echo "FAIL no sft checkpoint line: $(grep checkpoint "$tmp/sft-straight.log" | tail -2)"; fail=1; }
grep -q "resuming from .*step_000002" "$tmp/sft-continued.log" || { echo "FAIL the SFT run did not resume"; fail=1; }
same_checkpoint "sft resumed" "$tmp/sft-a/checkpoints/step_000005" "$tmp/sft-b/checkpoints/step_000005"
/usr/bin/python3 "$here/weights_moved.py" "$tmp/sft-b/checkpoints/step_000002" "$tmp/sft-b/checkpoints/step_000005" || fail=1
check sft-complete 0 "already complete" -- "$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft "${sft[@]}" \
  --train.steps 6 --run.out_dir "$tmp/sft-a" --resume latest
# A job killed after its last checkpoint but before sft.save_to was written: resuming the
# complete run writes the policy (the last checkpoint's weights).
check sft-complete-exports 0 "policy written to .*/sft-a-policy" -- "$src/scripts/mpirun_local.sh" 3 "$LEAP" train \
  --mode sft "${sft[@]}" --train.steps 6 --run.out_dir "$tmp/sft-a" --resume latest --sft.save_to "$tmp/sft-a-policy"
[ -f "$tmp/sft-a-policy/model.safetensors" ] && [ -f "$tmp/sft-a-policy/config.json" ] \
  && echo "ok   sft-complete-exports: the policy folder is there" || { echo "FAIL no policy after resuming the complete run"; fail=1; }
check sft-other-seed 2 "the checkpoint's run has run.seed = [0-9]*, this one 99: resume with --run.seed" -- \
  "$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft "${sft[@]}" --train.steps 8 --run.out_dir "$tmp/sft-a" \
  --resume latest --run.seed 99
check sft-checkpoint-in-rl 2 "cannot be resumed with --mode rl" -- "$src/scripts/mpirun_local.sh" 1 "$LEAP" train \
  --suite "$tmp/two.jsonl" --model "$tmp/tiny" --train.random_init --mpi.sandbox_ranks 0 --sandbox.device cpu \
  --train.steps 8 --run.out_dir "$tmp/sft-a" --resume latest

# ---- SFT stopped by SIGUSR1 (Slurm's early signal, as the jobscripts forward it) ----------------
# It checkpoints the step in flight and exits 75 (the jobscripts requeue on it); --resume latest
# goes on from there to the end.
setsid "$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft "${sft[@]}" --train.steps 40 \
  --run.out_dir "$tmp/sft-stop" >"$tmp/sft-stop.log" 2>&1 &
job=$!
for _ in $(seq 600); do ls "$tmp/sft-stop/checkpoints" 2>/dev/null | grep -q step_ && break; kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
kill -USR1 "$job"
wait "$job"; rc=$?
at=$(grep -o 'stopped by SIGUSR1 after step [0-9]*' "$tmp/sft-stop.log" | grep -o '[0-9]*$')
if [ "$rc" = 75 ] && [ -n "$at" ] && [ "$at" -lt 39 ] && [ -e "$tmp/sft-stop/checkpoints/step_$(printf %06d "$at")/state.json" ]; then
  echo "ok   sft stopped by USR1 after step $at, exit 75, its checkpoint written"
else
  echo "FAIL sft USR1 (exit $rc, step '${at}')"; tail -5 "$tmp/sft-stop.log"; ls "$tmp/sft-stop/checkpoints" 2>&1 | tail -3; fail=1
fi
check sft-stop-resumed 0 "sft done: 40 steps" -- "$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft "${sft[@]}" \
  --train.steps 40 --run.out_dir "$tmp/sft-stop" --resume latest

[ "$fail" = 0 ] && echo "all resume checks passed"
exit $fail
