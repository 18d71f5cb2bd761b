#!/usr/bin/env bash
# `leap tasks list|validate FILE` as a user meets it: the committed suites validate (exit 0 with
# a count), bad suites exit 2 with a message naming the file, the line and the field.
set -u
source "$(dirname "$0")/../cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
L1="$LEAP_SOURCE_DIR/tasks/level1.jsonl"
L2="$LEAP_SOURCE_DIR/tasks/level2.jsonl"

check validate-l1 0 "level1.jsonl: [0-9]+ tasks valid \([0-9]+ train, [0-9]+ heldout\)" -- "$LEAP" tasks validate "$L1"
check validate-l2 0 "level2.jsonl: [0-9]+ tasks valid" -- "$LEAP" tasks validate "$L2"
check validate-alias 0 "tasks valid" -- "$LEAP" tasks validate --suite "$L2"
check validate-families 0 "families.jsonl: [0-9]+ tasks valid \([0-9]+ train, 131 heldout: 113 clean, 18 marked seen_in_train\)" -- "$LEAP" tasks validate "$LEAP_SOURCE_DIR/tasks/families.jsonl"
check list 0 "^L1/relu +1 +elementwise +train +x:f32\[n\], out:f32\[n\]->out" -- "$LEAP" tasks list "$L1"
check list-heldout 0 "^L2/adam_step .*heldout" -- "$LEAP" tasks list "$L2"
check no-action 2 "expected 'list' or 'validate'" -- "$LEAP" tasks
check bad-action 2 "got 'show'" -- "$LEAP" tasks show "$L1"
check help 0 "usage: leap tasks" -- "$LEAP" tasks --help
check missing-file 2 "nope.jsonl" -- "$LEAP" tasks validate "$tmp/nope.jsonl"

# A good line followed by a line with a bad dtype: the message names file, line 2 and the field.
head -n 1 "$L1" > "$tmp/bad.jsonl"
head -n 1 "$L1" | sed -e 's/"id": "L1\/relu"/"id": "L1\/relu2"/' -e 's/"dtype": "f32"/"dtype": "f64"/' >> "$tmp/bad.jsonl"
check bad-dtype 2 "bad.jsonl:2: task 'L1/relu2': field 'buffers\[0\].dtype': unknown dtype 'f64'" -- "$LEAP" tasks validate "$tmp/bad.jsonl"
head -n 1 "$L1" > "$tmp/dup.jsonl"; head -n 1 "$L1" >> "$tmp/dup.jsonl"
check duplicate-id 2 "dup.jsonl:2: field 'id': 'L1/relu' is already the id of line 1" -- "$LEAP" tasks list "$tmp/dup.jsonl"
printf '{"id": "L1/x",\n' > "$tmp/broken.jsonl"
check broken-json 2 "broken.jsonl:1: not valid JSON" -- "$LEAP" tasks validate "$tmp/broken.jsonl"

if [ "$fail" = 0 ]; then echo "all tasks CLI checks passed"; fi
exit $fail
