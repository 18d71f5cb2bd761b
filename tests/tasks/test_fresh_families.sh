#!/usr/bin/env bash
# tasks/make_families.py --fresh: the RL suite of combinations no split of families.jsonl shows.
# Its train tasks are exactly the candidates that hold no held-out pair and are not train tasks of
# the suite (none is in the suite, none holds a held-out pair), its held-out split is the suite's
# unchanged, and `leap tasks validate` reads it.
# Usage: test_fresh_families.sh LEAP_BINARY SOURCE_DIR
set -euo pipefail
leap="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

/usr/bin/env python3 "$src/tasks/make_families.py" --fresh "$tmp/fresh.jsonl" > "$tmp/out.txt"
grep -q "785 fresh train tasks (elementwise 785) and the 110 held-out tasks" "$tmp/out.txt" \
  || { cat "$tmp/out.txt"; echo "FAIL: counts"; exit 1; }

/usr/bin/env python3 - "$src/tasks" "$tmp/fresh.jsonl" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import make_families as mf
suite = [json.loads(l) for l in open(sys.argv[1] + "/families.jsonl")]
fresh = [json.loads(l) for l in open(sys.argv[2])]
suite_ids = {t["id"] for t in suite}
train = [t for t in fresh if t["split"] == "train"]
assert not {t["id"] for t in train} & suite_ids, "a fresh task is in the suite"
assert [t for t in fresh if t["split"] == "heldout"] == [t for t in suite if t["split"] == "heldout"], \
    "held-out split changed"
# Rebuild the expectation from the grammar: every candidate without a held-out pair is either a
# train task of the suite or a fresh task, never both.
for name, combos, heldout, n_train, n_held, build in mf.FAMILIES:
    pairs = [p for p, _ in heldout]
    pool = [c for c in combos() if not any(mf.has_pair(c, p) for p in pairs)]
    ids = {build(c).obj["id"] for c in pool}
    suite_train = {t["id"] for t in suite if t["split"] == "train" and t["family"] == name}
    fresh_ids = {t["id"] for t in train if t["family"] == name}
    assert suite_train | fresh_ids == ids, name
    assert not suite_train & fresh_ids, name
print("fresh ok:", len(train), "train tasks")
PY

"$leap" tasks validate --suite "$tmp/fresh.jsonl" | grep -q "785 train, 110 heldout"
echo "PASS"
