#!/usr/bin/env bash
# tasks/make_families.py --fresh: the RL suite of combinations no split of families.jsonl shows.
# Its train tasks are exactly the candidates that hold no held-out pair and are not train tasks of
# the suite (none is in the suite, none holds a held-out pair), its held-out split is the suite's
# unchanged, and `leap tasks validate` reads it; --with-train adds the other families' train tasks,
# and --fresh without a path is exit 2; the output's folder is made when it is missing (new/ here).
# Usage: test_fresh_families.sh LEAP_BINARY SOURCE_DIR
set -euo pipefail
leap="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

/usr/bin/env python3 "$src/tasks/make_families.py" --fresh "$tmp/fresh.jsonl" > "$tmp/out.txt"
grep -q "785 fresh train tasks (elementwise 785) and the 131 held-out tasks" "$tmp/out.txt" \
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

"$leap" tasks validate --suite "$tmp/fresh.jsonl" | grep -q "785 train, 131 heldout"

# --with-train: the fresh tasks, then the suite's train tasks of the families without fresh ones.
/usr/bin/env python3 "$src/tasks/make_families.py" --fresh "$tmp/new/mixed.jsonl" --with-train > /dev/null
/usr/bin/env python3 - "$src/tasks/families.jsonl" "$tmp/fresh.jsonl" "$tmp/new/mixed.jsonl" <<'PY'
import json, sys
suite, fresh, mixed = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
train = lambda ts: [t for t in ts if t["split"] == "train"]
others = [t for t in train(suite) if t["family"] != "elementwise"]
assert train(mixed) == train(fresh) + others, "--with-train: not the fresh tasks then the other families' train tasks"
assert [t for t in mixed if t["split"] == "heldout"] == [t for t in suite if t["split"] == "heldout"]
print("with-train ok:", len(train(mixed)), "train tasks")
PY
"$leap" tasks validate --suite "$tmp/new/mixed.jsonl" | grep -q "1372 train, 131 heldout"

set +e
/usr/bin/env python3 "$src/tasks/make_families.py" --fresh 2> "$tmp/err"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q -- "--fresh needs the output path" "$tmp/err" || { cat "$tmp/err"; echo "FAIL: --fresh without a path (rc $rc)"; exit 1; }
echo "PASS"
