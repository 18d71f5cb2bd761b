#!/usr/bin/env bash
# `leap score` as a user runs it: a golden checkpoint's log-probs match PyTorch's (from
# make_golden.py), and bad input exits 2 with a message naming the problem.
# Run by ctest with LEAP (the binary) and LEAP_GOLDEN_DIR set.
set -u
dir="$LEAP_GOLDEN_DIR/qwen2_gqa_bias_untied/model"
source "$(dirname "$0")/../cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The first sequence of each golden batch, scored by the CLI and by PyTorch: Qwen2, and Qwen3
# (its per-head q/k norms) as a user's checkpoint folder.
for model in qwen2_gqa_bias_untied qwen3_qk_norm_tied; do
read -r tokens want < <(/usr/bin/python3 - "$LEAP_GOLDEN_DIR/$model/golden.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
def get(name):
    a, b = h[name]["data_offsets"]
    return struct.unpack("<%df" % ((b - a) // 4), raw[8 + n + a: 8 + n + b])
T = h["tokens"]["shape"][1]
L = int(get("lengths")[0])
toks = [int(x) for x in get("tokens")[:L]]
lp = get("logprobs")[1:L]
print(",".join(map(str, toks)), ",".join("%.9g" % x for x in lp))
PY
)
out=$("$LEAP" score --model "$LEAP_GOLDEN_DIR/$model/model" --tokens "$tokens" 2>&1); rc=$?
if [ $rc != 0 ]; then echo "FAIL score $model: exit $rc: $out"; fail=1
elif ! /usr/bin/python3 -c '
import json, sys
got = json.loads(sys.argv[1])["logprobs"]
want = [float(x) for x in sys.argv[2].split(",")]
assert len(got) == len(want), (len(got), len(want))
err = max(abs(a - b) for a, b in zip(got, want)) / max(abs(b) for b in want)
print("  leap score vs PyTorch (%s): rel err %.3e over %d tokens" % (sys.argv[3], err, len(got)))
sys.exit(0 if err <= 1e-4 else 1)' "$out" "$want" "$model"; then
  echo "FAIL score $model: log-probs differ from PyTorch"; echo "$out"; fail=1
else echo "ok   score-matches-pytorch ($model)"; fi
done

check score-help 0 "--score.tokens" -- "$LEAP" score --help
check no-model 2 "--model DIR is required" -- "$LEAP" score --tokens 1,2
check bad-token-text 2 "'x' is not an integer" -- "$LEAP" score --model "$dir" --tokens 1,x,3
check one-token 2 "at least 2" -- "$LEAP" score --model "$dir" --tokens 5
check id-out-of-range 2 "token id 97 .*out of range" -- "$LEAP" score --model "$dir" --tokens 1,97
check missing-dir 2 "config.json" -- "$LEAP" score --model "$tmp/nope" --tokens 1,2
mkdir -p "$tmp/broken" && cp "$dir/config.json" "$tmp/broken/"
head -c 1000 "$dir/model.safetensors" > "$tmp/broken/model.safetensors"
check truncated 2 "model.safetensors.*truncated" -- "$LEAP" score --model "$tmp/broken" --tokens 1,2
check unknown-option 2 "did you mean" -- "$LEAP" score --model "$dir" --token 1,2

if [ "$fail" = 0 ]; then echo "all score CLI checks passed"; fi
exit $fail
