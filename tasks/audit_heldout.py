#!/usr/bin/env python3
"""Audit of the held-out split of tasks/families.jsonl: the held-out tasks that are not new in the
way the split means them (a combination of parts no train task shows), each with the reason.

make_families.py holds a task out when it has one of its family's held-out pairs, and checks that
no train task has one. Four ways a held-out task can still be a copy of training, found by a
review after the demo policy was trained on this split (the first draw of 110 stays as it is, so
that the policy's figures stay comparable; this script says which held-out figures to trust, and
the extra held-out draw, make_families.HELDOUT_EXTRA, takes none that the first three flag; the
rules are make_families.leak_reasons):

  u2      an elementwise pair (op, dtype) or (op, op) that train shows through the second op of a
          `uu` task (U2(U1(x))), which make_families.py's check does not read;
  noop    a scale before a norm that ignores it but for its sign (l2norm, rmsnorm and layernorm of
          alpha * x are sign(alpha) times those of x, up to eps): a train task of that norm;
  retype  pure data movement (transpose, gathers, roll, concat, crop, ...) in a dtype of the
          same width as one train shows: only the type's name differs;
  cpu_s   `bs` with max or min where the op's range on normal inputs (|x| <= 4) lies on one side of
          the CPU's s (make_families.BS_S_CPU): max(u(x), s) is then u(x) or s and min(u(x), s)
          s or u(x), so on the CPU (the demo's evaluation) s never matters or nothing else does.
          None since s moved from -0.2 to 0.5 on the CPU (2026-12-05); three tasks before.

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

CPU_S = mf.BS_S_CPU  # the value of s under cpu_params (bs tasks)
NORMAL_REACH = 4.0  # |x| of a normal input at the CPU sizes (a few thousand draws) stays within it


def unary_range(key):
    """The least and the greatest value of op `key` on [-NORMAL_REACH, NORMAL_REACH], sampled densely
    with torch."""
    import torch
    x = torch.linspace(-NORMAL_REACH, NORMAL_REACH, 80001, dtype=torch.float64)
    y = eval(mf.UNARY[key].torch.format("x"), {"torch": torch, "F": torch.nn.functional, "x": x})  # noqa: S307
    return float(torch.nan_to_num(y, nan=math.inf).min()), float(torch.nan_to_num(y, nan=-math.inf).max())


def audit():
    flagged, clean, ids_of = {}, [], {}
    for name, combos, heldout, n_train, n_held, build in mf.FAMILIES:
        train, held = mf.select(name, combos(), heldout, n_train, n_held, mf.HELDOUT_EXTRA[name])
        pairs = [p for p, _ in heldout]
        ranges = {}
        for c in held:
            tid = build(c).obj["id"]
            reasons = mf.leak_reasons(name, c, train, pairs)
            if name == "elementwise" and c["form"] == "bs" and c.get("b") in ("max", "min"):
                lo, hi = ranges.setdefault(c["u"], unary_range(c["u"]))
                if lo >= CPU_S or hi <= CPU_S:
                    above = lo >= CPU_S
                    alone = above == (c["b"] == "max")
                    reasons.append(f"cpu_s: {c['u']} in [{lo:.3g}, {hi:.3g}], all {'above' if above else 'below'} "
                                   f"s = {CPU_S}, so {c['b']} with s is "
                                   + ("the op alone" if alone else "the constant s") + " on the CPU")
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
