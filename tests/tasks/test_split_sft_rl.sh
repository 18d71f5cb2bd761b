#!/usr/bin/env bash
# tasks/split_sft_rl.py on the families suite: the SFT and RL parts partition the train split
# (disjoint, together all of it, every family in both, one in three to RL), both keep the whole
# held-out split, `leap tasks validate` reads both, and bad arguments are exit 2 with the key.
# Usage: test_split_sft_rl.sh LEAP_BINARY SOURCE_DIR
set -euo pipefail
leap="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

/usr/bin/env python3 "$src/tasks/split_sft_rl.py" --suite "$src/tasks/families.jsonl" --every 3 \
  --out "$tmp/split" > "$tmp/counts.txt"
grep -q "^all .*sft  723  rl  364" "$tmp/counts.txt" || { cat "$tmp/counts.txt"; echo "FAIL: counts"; exit 1; }

/usr/bin/env python3 - "$src/tasks/families.jsonl" "$tmp/split" <<'EOF'
import json, sys
suite, out = sys.argv[1], sys.argv[2]
def read(path):
    return [json.loads(l) for l in open(path) if l.strip()]
tasks = read(suite)
sft, rl = read(out + "/sft.jsonl"), read(out + "/rl.jsonl")
ids = lambda ts, split: [t["id"] for t in ts if t["split"] == split]
train = ids(tasks, "train")
assert not set(ids(sft, "train")) & set(ids(rl, "train")), "a train task in both parts"
assert sorted(ids(sft, "train") + ids(rl, "train")) == sorted(train), "the parts are not the train split"
assert ids(sft, "heldout") == ids(tasks, "heldout") == ids(rl, "heldout"), "held-out split changed"
fams = {t["family"] for t in tasks if t["split"] == "train"}
for part in (sft, rl):
    assert {t["family"] for t in part if t["split"] == "train"} == fams, "a family missing from a part"
# Every third train task of a family, from its first, is RL's.
seen = {}
rl_ids = set(ids(rl, "train"))
for t in tasks:
    if t["split"] == "train":
        k = seen.get(t["family"], 0)
        seen[t["family"]] = k + 1
        assert (t["id"] in rl_ids) == (k % 3 == 0), t["id"]
# The tasks are copied whole.
by_id = {t["id"]: t for t in tasks}
assert all(by_id[t["id"]] == t for t in sft + rl), "a task was changed"
print("parts ok:", len(ids(sft, "train")), "sft,", len(rl_ids), "rl")
EOF

"$leap" tasks validate --suite "$tmp/split/sft.jsonl" | grep -q "723 train, 131 heldout"
"$leap" tasks validate --suite "$tmp/split/rl.jsonl" | grep -q "364 train, 131 heldout"

set +e
/usr/bin/env python3 "$src/tasks/split_sft_rl.py" --suite "$src/tasks/families.jsonl" --every 1 --out "$tmp/x" 2> "$tmp/err1"
rc1=$?
/usr/bin/env python3 "$src/tasks/split_sft_rl.py" --suite "$tmp/none.jsonl" --out "$tmp/x" 2> "$tmp/err2"
rc2=$?
printf '{"id": "a", "split": "train"}\nnot json\n' > "$tmp/bad.jsonl"
/usr/bin/env python3 "$src/tasks/split_sft_rl.py" --suite "$tmp/bad.jsonl" --out "$tmp/x" 2> "$tmp/err3"
rc3=$?
set -e
[[ $rc1 == 2 ]] && grep -q -- "--every 1" "$tmp/err1" || { cat "$tmp/err1"; echo "FAIL: --every 1 (rc $rc1)"; exit 1; }
[[ $rc2 == 2 ]] && grep -q "none.jsonl: no such file" "$tmp/err2" || { cat "$tmp/err2"; echo "FAIL: missing suite (rc $rc2)"; exit 1; }
[[ $rc3 == 2 ]] && grep -q "bad.jsonl:2: not JSON" "$tmp/err3" || { cat "$tmp/err3"; echo "FAIL: bad line (rc $rc3)"; exit 1; }
echo "PASS"
