#!/usr/bin/env python3
"""Audit of the held-out split of tasks/families.jsonl: the held-out tasks that are not new in the
way the split means them (a combination of parts no train task shows), each with the reason.

make_families.py holds a task out when it has one of its family's held-out pairs, and checks that
no train task has one. Four ways a held-out task can still be a copy of training, found by a
review after the demo policy was trained on this split (the suite stays as it is, so that the
policy's figures stay comparable; this script says which held-out figures to trust):

  u2      an elementwise pair (op, dtype) or (op, op) that train shows through the second op of a
          `uu` task (U2(U1(x))), which make_families.py's check does not read;
  noop    a scale before a norm that ignores it (l2norm, rmsnorm and layernorm of alpha * x with
          alpha > 0 are those of x, up to eps): the same function as a train task of that norm;
  retype  pure data movement (transpose, gathers, roll, concat, crop, ...) in a dtype of the
          same width as one train shows: only the type's name differs;
  cpu_s   `bs` with max or min where the op's range lies above the CPU's s (-0.2): max(u(x), s)
          is u(x) and min(u(x), s) is s, so on the CPU (the demo's evaluation) s never matters.

Usage: python3 tasks/audit_heldout.py [--json OUT] [--eval EVAL.json]
prints a table; OUT gets the clean ids and the flagged ones with reasons; with the JSON report of
a held-out `leap eval`, also Acc@t over all, clean and flagged tasks and the macro-average over
families. tests/tasks/test_heldout_audit.sh checks the counts.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_families as mf  # noqa: E402

# Ops that only move elements: the dtype changes the type's name, nothing else.
MOVES = {"transpose", "gather_rows", "gather_cols", "roll", "concat", "crop", "flip", "repeat", "tile", "slice"}
SCALE_INVARIANT = {"l2norm", "rmsnorm", "layernorm", "layernorm_plain"}
WIDTH = {"f32": 4, "i32": 4, "f16": 2, "bf16": 2}
CPU_S = -0.2  # make_families.py's value of s under cpu_params (bs tasks)


def unary_min(key):
    """The least value of op `key` over the reals, sampled densely over [-20, 20] with torch."""
    import torch
    x = torch.linspace(-20.0, 20.0, 400001, dtype=torch.float64)
    y = eval(mf.UNARY[key].torch.format("x"), {"torch": torch, "F": torch.nn.functional, "x": x})  # noqa: S307
    return float(torch.nan_to_num(y, nan=math.inf).min())


def held_pairs(c, pairs):
    return [p for p in pairs if mf.has_pair(c, p)]


def audit():
    flagged, clean, ids_of = {}, [], {}
    for name, combos, heldout, n_train, n_held, build in mf.FAMILIES:
        train, held = mf.select(name, combos(), heldout, n_train, n_held)
        pairs = [p for p, _ in heldout]
        # What train shows when a uu task's second op counts as an op too.
        train_views = list(train) + [dict(c, u=c["u2"]) for c in train if "u2" in c]
        mins = {}
        for c in held:
            tid = build(c).obj["id"]
            reasons = []
            hp = held_pairs(c, pairs)
            if hp and all(any(mf.has_pair(t, p) for t in train_views) for p in hp):
                reasons.append("u2: its held-out pair " + ", ".join("/".join(f"{a}={v}" for a, v in p) for p in hp)
                               + " is in train as a uu task's second op")
            if name == "normalization" and c.get("pre") == "scale" and c["kind"] in SCALE_INVARIANT:
                same = [t for t in train if t["kind"] == c["kind"] and t["axis"] == c["axis"] and t["pre"] == "none"]
                if same:
                    reasons.append(f"noop: {c['kind']} ignores the scale; train has it unscaled ({len(same)} tasks)")
            if name == "indexing" and c["op"] in MOVES:
                same = [t for t in train if t["op"] == c["op"] and t.get("dtype") != c.get("dtype")
                        and WIDTH.get(t.get("dtype")) == WIDTH.get(c.get("dtype"))
                        and all(t.get(k) == v for k, v in c.items() if k != "dtype")]
                if same:
                    reasons.append(f"retype: moving {c['dtype']} as train moves {same[0]['dtype']}")
            if name == "elementwise" and c["form"] == "bs" and c.get("b") in ("max", "min"):
                lo = mins.setdefault(c["u"], unary_min(c["u"]))
                if lo >= CPU_S:
                    reasons.append(f"cpu_s: {c['u']} >= {lo:.3g} > s = {CPU_S}, so {c['b']} with s is "
                                   + ("the op alone" if c["b"] == "max" else "the constant s") + " on the CPU")
            ids_of[tid] = name
            if reasons:
                flagged[tid] = reasons
            else:
                clean.append(tid)
    return flagged, clean, ids_of


def main(argv):
    flagged, clean, ids_of = audit()
    families = sorted(set(ids_of.values()))
    print(f"held-out tasks: {len(ids_of)}; not new as the split means: {len(flagged)}; clean: {len(clean)}")
    for fam in families:
        n = sum(1 for t in ids_of if ids_of[t] == fam)
        f = sum(1 for t in flagged if ids_of[t] == fam)
        print(f"  {fam:<14} {n:3d} held out, {f:2d} flagged")
    for tid in sorted(flagged):
        print(f"{tid}: {'; '.join(flagged[tid])}")
    if "--eval" in argv:
        report = json.load(open(argv[argv.index("--eval") + 1], encoding="utf-8"))
        tasks = [t for t in report["per_task"] if t["id"] in ids_of]
        turns = len(report["overall"]["acc"])

        def acc(ts, t):
            return sum(x["acc"][t] for x in ts) / len(ts) if ts else float("nan")

        for label, ts in (("all", tasks), ("clean", [t for t in tasks if t["id"] not in flagged]),
                          ("flagged", [t for t in tasks if t["id"] in flagged])):
            fams = sorted({t["family"] for t in ts})
            macro = sum(acc([t for t in ts if t["family"] == f], turns - 1) for f in fams) / max(1, len(fams))
            print(f"{label:<8} {len(ts):3d} tasks: " + " ".join(f"Acc@{u + 1} {acc(ts, u):.3f}" for u in range(turns))
                  + f"; macro over families Acc@{turns} {macro:.3f}")
    if "--json" in argv:
        out = argv[argv.index("--json") + 1]
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"clean": sorted(clean), "flagged": {t: flagged[t] for t in sorted(flagged)}}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
