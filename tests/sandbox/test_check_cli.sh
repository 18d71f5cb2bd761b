#!/usr/bin/env bash
# `leap check` as a user runs it: one JSON object whatever the verdict (exit 0), exit 2 for bad
# input. Run by ctest with LEAP set to the binary and LEAP_SOURCE_DIR to the source tree.
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
suite="$LEAP_SOURCE_DIR/tasks/level1.jsonl"

source "$(dirname "$0")/../cli/check_lib.sh"

# The first task of the suite and its reference answer, pulled out with the JSON tooling at hand.
task=$(head -1 "$suite" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
head -1 "$suite" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reference"])' > "$tmp/ref.md"
printf 'I think a loop would do it.\n' > "$tmp/prose.md"
printf '```cuda\n__global__ void k(float* o) { o[0] = 1 }\n// launch: k<<<1, 1>>>(out)\n```\n' > "$tmp/syntax.md"
printf '{"id": "broken"\n' > "$tmp/bad.jsonl"

check ref-ok 0 '"verdict": "OK"' -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/ref.md" --device cpu
check json-fields 0 '"speedup": null' -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/ref.md" --device cpu
check format-error 0 '"verdict": "FORMAT_ERROR"' -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/prose.md" --device cpu
check compile-error 0 '"verdict": "COMPILE_ERROR"' -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/syntax.md" --device cpu
# The output is one JSON object with every field.
out=$("$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/ref.md" --device cpu 2>/dev/null)
if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert set(["verdict","max_abs_err","speedup","compile_ms","exec_ms","feedback"]) <= set(d)' "$out"; then
  echo "ok   json-parses"
else
  echo "FAIL json-parses: $out"; fail=1
fi

check unknown-task 2 "no task .L1/nope." -- "$LEAP" check --suite "$suite" --task L1/nope --answer "$tmp/ref.md" --device cpu
check missing-answer 2 "cannot read the answer file" -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/none.md" --device cpu
check bad-suite 2 "bad.jsonl" -- "$LEAP" check --suite "$tmp/bad.jsonl" --task "$task" --answer "$tmp/ref.md" --device cpu
check missing-suite 2 "nope.jsonl" -- "$LEAP" check --suite "$tmp/nope.jsonl" --task "$task" --answer "$tmp/ref.md" --device cpu
check no-task-flag 2 "--task ID and --answer FILE are required" -- "$LEAP" check --suite "$suite" --answer "$tmp/ref.md"
check bad-device 2 "one of auto\|cpu\|gpu" -- "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/ref.md" --device tpu
check gpu-without-one 2 "no GPU" -- env CUDA_VISIBLE_DEVICES= "$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/ref.md" --device gpu

# The issue's two hostile answers (a line splice and a digraph before `include`) pass the text
# filter; the confined worker's compiler cannot open the world-readable secret, and its contents
# appear nowhere. The worker says how it is confined.
secret_dir=$(mktemp -d /tmp/leap-secret-XXXXXX); chmod 755 "$secret_dir"
token="LEAP_SECRET_$RANDOM$RANDOM$RANDOM"
echo "$token = 1;" > "$secret_dir/secret.h"; chmod 644 "$secret_dir/secret.h"
body=$(sed -n '/```cuda/,/```/p' "$tmp/ref.md" | sed '1d;$d')
printf '```cuda
#\
include "%s"
%s
```
' "$secret_dir/secret.h" "$body" > "$tmp/splice.md"
printf '```cuda
%%:include "%s"
%s
```
' "$secret_dir/secret.h" "$body" > "$tmp/digraph.md"
for a in splice digraph; do
  out=$("$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/$a.md" --device cpu 2>&1)
  if [[ "$out" == *'"verdict": "COMPILE_ERROR"'* && "$out" != *"$token"* && "$out" == *"Landlock ABI"* ]]; then
    echo "ok   hostile-$a"
  else
    echo "FAIL hostile-$a: $out"; fail=1
  fi
done
# The control: unconfined, the same answer shows the secret (so the check above can fail).
out=$("$LEAP" check --suite "$suite" --task "$task" --answer "$tmp/splice.md" --device cpu --sandbox.confine=off 2>&1)
if [[ "$out" == *"$token"* && "$out" == *"sandbox.confine=off"* ]]; then
  echo "ok   hostile-control-leaks"
else
  echo "FAIL hostile-control-leaks: $out"; fail=1
fi
rm -rf "$secret_dir"

if [ "$fail" = 0 ]; then echo "all leap check CLI checks passed"; fi
exit $fail
