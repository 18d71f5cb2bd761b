#!/usr/bin/env bash
# backend.name = cuda as a user meets it. Without a usable GPU (or in a build without CUDA)
# `leap score` and `leap train` refuse it with exit code 2 and a message that names the fix,
# and write nothing. With a GPU, `leap score` on cuda matches the CPU backend's log-probs to
# bf16 precision. Run by ctest with LEAP (the binary) and LEAP_SOURCE_DIR set.
set -u
source "$LEAP_SOURCE_DIR/tests/cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model="$LEAP_SOURCE_DIR/models/demo"
tokens="256,35,105,110,99,108,117,100,101,32,60,99,117,100,97"

if "$LEAP" --version 2>&1 | grep -q "device: none"; then
  check "score: cuda without a GPU is exit 2" 2 "backend.name = cuda.*(no usable GPU|built without CUDA).*backend.name = cpu" \
    -- "$LEAP" score --model "$model" --tokens "$tokens" --backend.name=cuda
  check "train: cuda without a GPU is exit 2" 2 "backend.name = cuda.*(no usable GPU|built without CUDA)" \
    -- "$LEAP" train --config "$LEAP_SOURCE_DIR/configs/demo_v1.ini" --model "$model" \
       --run.out_dir="$tmp/run" --backend.name=cuda
  if [ -e "$tmp/run" ]; then echo "FAIL train: the refused run wrote $tmp/run"; fail=1; fi
else
  cpu=$("$LEAP" score --model "$model" --tokens "$tokens" --backend.name=cpu) || fail=1
  gpu=$("$LEAP" score --model "$model" --tokens "$tokens" --backend.name=cuda) || fail=1
  /usr/bin/python3 -c '
import json, sys
a = json.loads(sys.argv[1])["logprobs"]; b = json.loads(sys.argv[2])["logprobs"]
d = max(abs(x - y) for x, y in zip(a, b))
print("score cuda vs cpu: max |diff| %.3e" % d)
sys.exit(0 if len(a) == len(b) and d < 0.1 else 1)' "$cpu" "$gpu" || { echo "FAIL score cuda vs cpu"; fail=1; }
fi
check "score: unknown backend is exit 2" 2 "backend.name" \
  -- "$LEAP" score --model "$model" --tokens "$tokens" --backend.name=tpu
exit $fail
