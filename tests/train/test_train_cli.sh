#!/usr/bin/env bash
# `leap train` as a user runs it: a short RL run on 4 ranks (2 policy, 2 sandbox with worker
# processes) and on 1 rank (sandbox in-process), each read back with h5py; a run folder that
# already holds trajectories is refused; bad layouts exit 2 on every rank; SFT writes its policy.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/model" && cp "$here/tiny_config.json" "$tmp/model/config.json"
fail=0
common=(--suite "$src/tasks/level1.jsonl" --model "$tmp/model" --train.random_init --train.batch_tasks 2 --rl.group_size 4
        --sampler.max_new_tokens 48 --sandbox.device cpu --train.check_replicas_every 1 --log.level warn)

run() {  # run NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  if "$src/scripts/mpirun_local.sh" "$np" "$LEAP" train "$@" >"$tmp/$name.log" 2>&1; then echo "ok   $name"
  else echo "FAIL $name"; tail -20 "$tmp/$name.log"; fail=1; fi
}

run four-ranks 4 --config "$src/configs/demo_v1.ini" "${common[@]}" --train.steps 2 --run.out_dir "$tmp/run4"
/usr/bin/python3 "$here/check_run.py" "$tmp/run4" 2 2 4 2 || fail=1
# One rank decoding its 8 samples together while prefilling and training 2 at a time.
run one-rank 1 "${common[@]}" --train.steps 2 --train.micro_batch_seqs 2 --sampler.batch_seqs 8 --run.out_dir "$tmp/run1"
/usr/bin/python3 "$here/check_run.py" "$tmp/run1" 2 2 4 1 || fail=1

# An existing run is never overwritten.
if "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${common[@]}" --train.steps 2 --run.out_dir "$tmp/run1" >"$tmp/again.log" 2>&1; then
  echo "FAIL rerun into an existing run folder succeeded"; fail=1
elif grep -q "holds an earlier run's checkpoints (the newest: .*step_000001): continue that run with --resume latest" "$tmp/again.log"; then
  echo "ok   existing-run-refused"
else echo "FAIL existing-run message"; cat "$tmp/again.log"; fail=1; fi

# A layout without a policy rank: exit 2 on every rank, with the fix in the message.
"$src/scripts/mpirun_local.sh" 2 "$LEAP" train "${common[@]}" --train.steps 2 --mpi.sandbox_ranks 2 --run.out_dir "$tmp/bad" >"$tmp/bad.log" 2>&1
if grep -q "leaves no policy rank" "$tmp/bad.log" && [ ! -e "$tmp/bad/trajectories.h5" ]; then echo "ok   bad-layout"
else echo "FAIL bad-layout"; cat "$tmp/bad.log"; fail=1; fi

# Crash and resume with real updates: test_train_resume.sh (the demo policy, which trains).

# Resuming where there is nothing to resume is a clear error, exit 2.
"$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${common[@]}" --train.steps 4 --run.out_dir "$tmp/empty" --resume latest >"$tmp/empty.log" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "nothing to resume" "$tmp/empty.log"; then echo "ok   resume-nothing"
else echo "FAIL resume-nothing (exit $rc)"; cat "$tmp/empty.log"; fail=1; fi

# Prompts and answers against the model's context (4096 positions here), refused before any
# step with exit 2: no room for a prompt; a prompt limit the sampler would refuse; a suite none of
# whose turn-1 prompts fits; a suite with no train task.
refused() {  # refused NAME MESSAGE ARGS...: ARGS replace common's options of the same name
  local name="$1" want="$2"; shift 2
  local base=() i
  for ((i = 0; i < ${#common[@]}; i++)); do
    if [[ "${common[i]}" == --* && " $* " == *" ${common[i]} "* ]]; then
      [[ "${common[i + 1]:-}" != --* ]] && i=$((i + 1))  # and its value
    else
      base+=("${common[i]}")
    fi
  done
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${base[@]}" --train.steps 2 --run.out_dir "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  if [ "$rc" = 2 ] && grep -q -- "$want" "$tmp/$name.log" && [ ! -e "$tmp/$name/trajectories.h5" ]; then echo "ok   $name"
  else echo "FAIL $name (exit $rc, want 2 and '$want')"; tail -5 "$tmp/$name.log"; fail=1; fi
}
refused answer-fills-context "sampler.max_new_tokens' = 4040 leaves no room for a prompt" --sampler.max_new_tokens 4040
refused prompt-limit-fills-context "prompt.max_prompt_tokens' = 4096 is not below" --prompt.max_prompt_tokens 4096
refused no-prompt-fits "no sample could start" --prompt.max_prompt_tokens 16
grep '"split": *"heldout"' "$src/tasks/level1.jsonl" > "$tmp/heldout_only.jsonl"
refused no-train-task "has no train tasks" --suite "$tmp/heldout_only.jsonl"
# sft.save_to is replaced whole at the end: among the run's checkpoints it is refused before the run.
refused export-in-run "inside run.out_dir's checkpoints" --mode sft --sft.save_to "$tmp/export-in-run/checkpoints/policy"

# SFT warm start on a few tasks: material verified by a sandbox rank, two policy ranks train, the
# policy is written where asked (both ranks joining the export) and opens with `leap score`.
head -n 4 "$src/tasks/level1.jsonl" > "$tmp/four.jsonl"
# An SFT material that comes out empty (the prompts fit a 1700-position context, no prompt with its
# reference answer does) is bad input: exit 2 with the reason from rank 0, every rank stopping,
# not an abort.
mkdir -p "$tmp/short" && sed 's/"max_position_embeddings": 4096/"max_position_embeddings": 1700/' "$here/tiny_config.json" > "$tmp/short/config.json"
"$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft --suite "$tmp/four.jsonl" --model "$tmp/short" --train.random_init \
  --train.steps 2 --sft.batch_seqs 4 --mpi.sandbox_ranks 1 --sandbox.device cpu --sampler.max_new_tokens 64 \
  --run.out_dir "$tmp/sft-empty" >"$tmp/sft-empty.log" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "the SFT material of .* is empty" "$tmp/sft-empty.log" && ! grep -q "FATAL" "$tmp/sft-empty.log"; then
  echo "ok   sft-empty-material"
else echo "FAIL sft-empty-material (exit $rc)"; tail -5 "$tmp/sft-empty.log"; fail=1; fi
run sft 3 --mode sft --suite "$tmp/four.jsonl" --model "$tmp/model" --train.random_init --train.steps 3 \
    --sft.batch_seqs 4 --mpi.sandbox_ranks 1 --sandbox.device cpu --run.out_dir "$tmp/sft" --sft.save_to "$tmp/sft/policy"
if grep -q "sft material: [0-9]* train tasks -> [1-9]" "$tmp/sft.log" && grep -q "sft done: 3 steps" "$tmp/sft.log" &&
   "$LEAP" score --model "$tmp/sft/policy" --tokens 1,2,3 | grep -q logprobs; then echo "ok   sft-policy-written"
else echo "FAIL sft"; tail -5 "$tmp/sft.log"; fail=1; fi

# A fresh SFT run (no trajectory file to refuse) into that folder: refused before it writes, as
# it would otherwise prune the earlier run's checkpoints as its own and a --resume would take
# them; the earlier checkpoints stay.
before=$(ls "$tmp/sft/checkpoints")
"$src/scripts/mpirun_local.sh" 3 "$LEAP" train --mode sft --suite "$tmp/four.jsonl" --model "$tmp/model" --train.random_init \
  --train.steps 2 --sft.batch_seqs 4 --mpi.sandbox_ranks 1 --sandbox.device cpu --run.out_dir "$tmp/sft" \
  --sft.save_to "$tmp/sft/policy2" >"$tmp/sft-again.log" 2>&1
rc=$?
if [ "$rc" = 2 ] && grep -q "holds an earlier run's checkpoints" "$tmp/sft-again.log" &&
   [ "$(ls "$tmp/sft/checkpoints")" = "$before" ] && [ ! -e "$tmp/sft/policy2" ]; then echo "ok   sft-into-earlier-run-refused"
else echo "FAIL sft-into-earlier-run-refused (exit $rc)"; tail -5 "$tmp/sft-again.log"; ls "$tmp/sft/checkpoints"; fail=1; fi

[ "$fail" = 0 ] && echo "all train CLI checks passed"
exit $fail
