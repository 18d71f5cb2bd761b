#!/usr/bin/env bash
# `leap eval` as a user runs it: the demo policy on three level-1 tasks (two train, one heldout),
# 4 samples each with up to 2 turns, on 4 ranks (2 policy, 2 sandbox with worker processes) and
# on 1 rank (sandbox in-process). Both reports must hold the same records and metrics, Python
# recomputes every aggregate from the records, some samples pass (so pass@k is not trivially
# 0), and bad input exits 2 with a message naming the fix.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$src/tests/cli/check_lib.sh"
mpirun_local="$src/scripts/mpirun_local.sh"

grep -E '"id": "L1/(relu|add|tanh)"' "$src/tasks/level1.jsonl" > "$tmp/three.jsonl"
# Each option may be given once: the cases below add --model and --suite as they need.
demo=(--model "$src/models/demo" --eval.k 1,2,4)
three=(--suite "$tmp/three.jsonl" --split all)

common=(--config "$src/configs/demo_v1.ini" --eval.samples 4 --eval.turns 2 --eval.batch_tasks 2 --sampler.max_new_tokens 400
        --log.level warn)

check four-ranks 0 "pass@1" -- "$mpirun_local" 4 "$LEAP" eval "${common[@]}" "${demo[@]}" "${three[@]}" \
  --output "$tmp/four.json"
/usr/bin/python3 "$here/check_eval.py" check "$tmp/four.json" "$tmp/three.jsonl" || fail=1
check one-rank 0 "split heldout" -- "$mpirun_local" 1 "$LEAP" eval "${common[@]}" "${demo[@]}" "${three[@]}" \
  --mpi.sandbox_ranks 0 --output "$tmp/one.json"
/usr/bin/python3 "$here/check_eval.py" same "$tmp/four.json" "$tmp/one.json" || fail=1
# The demo policy passes some of these samples, so the metrics above were checked on real passes.
if /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['records']; sys.exit(not any(x['verdict']=='OK' for x in r))" "$tmp/four.json"
then echo "ok   some samples pass"; else echo "FAIL no sample passed"; fail=1; fi

# The policy ranks are built for sampling only: no gradient, no optimizer state (read from what
# was built; a training-shaped policy held both, 3x the weights).
check sampling-only-policy 0 "policy: [0-9]+ parameters, weights fp32, gradient none, optimizer state none$" -- "$mpirun_local" 1 "$LEAP" eval \
  --config "$src/configs/demo_v1.ini" --eval.samples 1 --eval.turns 1 --sampler.max_new_tokens 8 --model "$src/models/demo" \
  --suite "$tmp/three.jsonl" --split heldout --eval.k 1 --mpi.sandbox_ranks 0 --output "$tmp/lean.json"

# With optim.master_weights = optimizer (a config for ZeRO on CUDA) the evaluation keeps the
# weights as training would, its matrices in bf16, and no masters (it has no optimizer).
check sampling-bf16-matrices 0 "policy: [0-9]+ parameters, weights bf16 matrices, gradient none, optimizer state none$" -- \
  "$mpirun_local" 1 "$LEAP" eval --config "$src/configs/demo_v1.ini" --eval.samples 1 --eval.turns 1 \
  --sampler.max_new_tokens 8 --model "$src/models/demo" --suite "$tmp/three.jsonl" --split heldout --eval.k 1 \
  --mpi.sandbox_ranks 0 --output "$tmp/lean-bf16.json" --optim.master_weights optimizer

# A suite that marks held-out tasks seen_in_train (tasks/families.jsonl does, from its audit): the
# report adds heldout_clean, the held-out tasks without the mark, and names the marks per task;
# check_eval.py recomputes heldout_clean from the suite.
/usr/bin/python3 - "$tmp/three.jsonl" "$tmp/marked.jsonl" <<'PY'
import json, sys
tasks = [json.loads(l) for l in open(sys.argv[1])]
for t in tasks:
    t["split"] = "heldout"
tasks[0]["seen_in_train"] = ["u2: a made-up reason"]
open(sys.argv[2], "w").write("".join(json.dumps(t) + "\n" for t in tasks))
PY
check heldout-clean 0 "split heldout_clean +2 " -- "$mpirun_local" 1 "$LEAP" eval --config "$src/configs/demo_v1.ini" \
  --eval.samples 1 --eval.turns 1 --sampler.max_new_tokens 8 --model "$src/models/demo" --suite "$tmp/marked.jsonl" \
  --split heldout --eval.k 1 --mpi.sandbox_ranks 0 --output "$tmp/marked.json"
/usr/bin/python3 "$here/check_eval.py" check "$tmp/marked.json" "$tmp/marked.jsonl" || fail=1
if /usr/bin/python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
marked = [t['id'] for t in r['per_task'] if t.get('seen_in_train') == ['u2: a made-up reason']]
sys.exit(not (r['by_split']['heldout_clean']['tasks'] == 2 and r['by_split']['heldout']['tasks'] == 3 and len(marked) == 1))
" "$tmp/marked.json"; then echo "ok   heldout_clean counts 2 of 3, the marked task names its reason"
else echo "FAIL heldout_clean or seen_in_train missing from the report"; fail=1; fi
# Every evaluated held-out task marked: no clean split to report, so no heldout_clean (not an
# empty one), and check_eval.py agrees.
/usr/bin/python3 -c "
import json, sys
for l in open(sys.argv[1]):
    t = json.loads(l); t['seen_in_train'] = ['u2: a made-up reason']; print(json.dumps(t))
" "$tmp/marked.jsonl" > "$tmp/all_marked.jsonl"
check heldout-all-marked 0 "split heldout " -- "$mpirun_local" 1 "$LEAP" eval --config "$src/configs/demo_v1.ini" \
  --eval.samples 1 --eval.turns 1 --sampler.max_new_tokens 8 --model "$src/models/demo" --suite "$tmp/all_marked.jsonl" \
  --split heldout --eval.k 1 --mpi.sandbox_ranks 0 --output "$tmp/all_marked.json"
/usr/bin/python3 "$here/check_eval.py" check "$tmp/all_marked.json" "$tmp/all_marked.jsonl" || fail=1
if /usr/bin/python3 -c "import json, sys; sys.exit('heldout_clean' in json.load(open(sys.argv[1]))['by_split'])" "$tmp/all_marked.json"
then echo "ok   no heldout_clean when every held-out task is marked"
else echo "FAIL heldout_clean reported with no clean task"; fail=1; fi

# Bad input: exit 2, a message naming the key or file and the fix, and no report written.
check k-above-n 2 "eval.k = '1,8'.*raise eval.samples" -- "$LEAP" eval "${common[@]}" --model "$src/models/demo" "${three[@]}" --eval.k 1,8 --output "$tmp/bad.json"
check bad-k 2 "'x' is not a positive integer" -- "$LEAP" eval "${common[@]}" --model "$src/models/demo" "${three[@]}" --eval.k 1,x --output "$tmp/bad.json"
check missing-model 2 "$tmp/nope" -- "$mpirun_local" 1 "$LEAP" eval "${common[@]}" "${three[@]}" --mpi.sandbox_ranks 0 \
  --model "$tmp/nope" --eval.k 1 --output "$tmp/bad.json"
check missing-suite 2 "$tmp/none.jsonl" -- "$mpirun_local" 1 "$LEAP" eval "${common[@]}" "${demo[@]}" --mpi.sandbox_ranks 0 \
  --suite "$tmp/none.jsonl" --output "$tmp/bad.json"
# A prompt limit no task's prompt fits: refused before any sample, not a report of failures.
check no-prompt-fits 2 "of the 3 tasks of .* have a turn-1 prompt longer than the prompt budget of 16 tokens.*no sample could start" -- \
  "$mpirun_local" 1 "$LEAP" eval "${common[@]}" "${demo[@]}" "${three[@]}" --mpi.sandbox_ranks 0 --prompt.max_prompt_tokens 16 \
  --output "$tmp/bad.json"
grep -E '"id": "L1/(relu|add)"' "$src/tasks/level1.jsonl" > "$tmp/train_only.jsonl"
check empty-split-4-ranks 2 "has no heldout tasks" -- "$mpirun_local" 4 "$LEAP" eval "${common[@]}" "${demo[@]}" \
  --suite "$tmp/train_only.jsonl" --split heldout --output "$tmp/bad.json"
check output-folder 2 "does not exist" -- "$mpirun_local" 1 "$LEAP" eval "${common[@]}" "${demo[@]}" "${three[@]}" \
  --mpi.sandbox_ranks 0 --output "$tmp/no/such/dir/e.json"
if [ -e "$tmp/bad.json" ]; then echo "FAIL a report was written for bad input"; fail=1; fi

[ "$fail" = 0 ] && echo "all eval CLI checks passed"
exit $fail
