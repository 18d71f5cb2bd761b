#!/usr/bin/env python3
"""Checks a `leap eval` JSON report against its own per-sample records.

  check_eval.py check REPORT.json SUITE.jsonl   recompute every aggregate from the records
                                                (pass@k with exact binomials, Acc@t, fast_p,
                                                verdict counts, per split / family / task)
  check_eval.py same A.json B.json              two reports hold the same records and metrics

Exits 1 with the first differences printed.
"""
import json
import math
import sys


def pass_at_k(n, c, k):
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def close(a, b):
    return abs(a - b) <= 1e-9


def summary(task_ids, recs_by_task, rep):
    n, turns, ks = rep["samples_per_task"], rep["turns"], rep["k"]
    ps, timed = rep["fast_p_thresholds"], rep["timed"]
    out = {"tasks": len(task_ids), "samples": len(task_ids) * n,
           "pass_at_k": {str(k): [0.0] * turns for k in ks}, "acc": [0.0] * turns,
           "fast_p": {("%g" % p): [0.0] * turns for p in ps} if timed else None,
           "verdicts_by_turn": [{} for _ in range(turns)], "stopped_before_turn": [0] * turns, "turn_samples": 0}
    tokens = 0
    for tid in task_ids:
        recs = recs_by_task.get(tid, [])
        # A sample without a record never got turn 1; one that failed with turns left and went no
        # further did not get the next (its prompt did not fit the context).
        for s in range(n):
            mine = [r for r in recs if r["sample"] == s]
            if not mine:
                out["stopped_before_turn"][0] += 1
                continue
            final = max(mine, key=lambda r: r["turn"])
            if final["verdict"] not in ("OK", "SANDBOX_ERROR") and final["turn"] < turns:
                out["stopped_before_turn"][final["turn"]] += 1
        for r in recs:
            v = out["verdicts_by_turn"][r["turn"] - 1]
            v[r["verdict"]] = v.get(r["verdict"], 0) + 1
            out["turn_samples"] += 1
            tokens += r["completion_tokens"]
        for t in range(1, turns + 1):
            ok = [r for r in recs if r["verdict"] == "OK" and r["turn"] <= t]
            c = len({r["sample"] for r in ok})
            for k in ks:
                out["pass_at_k"][str(k)][t - 1] += pass_at_k(n, c, k) / len(task_ids)
            out["acc"][t - 1] += c / n / len(task_ids)
            if timed:
                for p in ps:
                    fast = sum(1 for r in ok if r["speedup"] is not None and r["speedup"] > p)
                    out["fast_p"]["%g" % p][t - 1] += fast / n / len(task_ids)
    out["mean_completion_tokens"] = tokens / out["turn_samples"] if out["turn_samples"] else 0.0
    return out


def compare(name, got, want, errors):
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            errors.append(f"{name}: keys {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}")
            return
        for key in want:
            compare(f"{name}.{key}", got[key], want[key], errors)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            errors.append(f"{name}: {got} != {want}")
            return
        for i, (g, w) in enumerate(zip(got, want)):
            compare(f"{name}[{i}]", g, w, errors)
    elif isinstance(want, float):
        if got is None or not close(got, want):
            errors.append(f"{name}: {got} != {want}")
    elif got != want:
        errors.append(f"{name}: {got} != {want}")


def check(report_path, suite_path):
    rep = json.load(open(report_path))
    suite = {}
    for line in open(suite_path):
        if line.strip():
            t = json.loads(line)
            suite[t["id"]] = t
    errors = []
    task_ids = [t["id"] for t in rep["per_task"]]
    want_split = rep["split"]
    expected = [i for i, t in suite.items() if want_split == "all" or t["split"] == want_split]
    if task_ids != expected:
        errors.append(f"tasks {task_ids} are not the suite's {want_split} tasks {expected}")
    recs_by_task = {}
    for r in rep["records"]:
        recs_by_task.setdefault(r["task"], []).append(r)
    if set(recs_by_task) - set(task_ids):
        errors.append(f"records of tasks not evaluated: {set(recs_by_task) - set(task_ids)}")
    # A sample's turns run 1..m with no gap, and it stops at its first OK.
    for tid, recs in recs_by_task.items():
        samples = {}
        for r in recs:
            samples.setdefault(r["sample"], []).append(r)
        for s, rs in samples.items():
            turns = [r["turn"] for r in rs]
            if turns != list(range(1, len(rs) + 1)) or any(r["verdict"] == "OK" for r in rs[:-1]):
                errors.append(f"{tid} sample {s}: turns {turns} verdicts {[r['verdict'] for r in rs]}")
            if not 0 <= s < rep["samples_per_task"] or len(rs) > rep["turns"]:
                errors.append(f"{tid} sample {s} out of range")
        # The answer's text is there, and a failed answer says why (the feedback its next turn sees).
        for r in recs:
            if (r["completion_tokens"] > 0) != bool(r["completion"]):
                errors.append(f"{tid} sample {r['sample']} turn {r['turn']}: {r['completion_tokens']} "
                              f"completion tokens but text {r['completion'][:40]!r}")
            if r["verdict"] != "OK" and not r["feedback"]:
                errors.append(f"{tid} sample {r['sample']} turn {r['turn']}: {r['verdict']} without feedback")
    compare("overall", rep["overall"], summary(task_ids, recs_by_task, rep), errors)
    for key, field in (("by_split", "split"), ("by_family", "family")):
        groups = {}
        for tid in task_ids:
            groups.setdefault(suite[tid][field], []).append(tid)
        if key == "by_split":
            # heldout_clean: the held-out tasks the suite does not mark seen_in_train, where it
            # marks some of them and not all.
            held = [tid for tid in task_ids if suite[tid]["split"] == "heldout"]
            clean = [tid for tid in held if "seen_in_train" not in suite[tid]]
            if 0 < len(clean) < len(held):
                groups["heldout_clean"] = clean
        compare(key, rep[key], {g: summary(ids, recs_by_task, rep) for g, ids in groups.items()}, errors)
    for row in rep["per_task"]:
        want = summary([row["id"]], recs_by_task, rep)
        del want["tasks"]
        got = {k: v for k, v in row.items() if k not in ("id", "family", "split", "correct_by_turn", "seen_in_train")}
        if row.get("seen_in_train") != suite[row["id"]].get("seen_in_train"):
            errors.append(f"per_task {row['id']}: seen_in_train differs from the suite")
        compare("per_task " + row["id"], got, want, errors)
        if row["family"] != suite[row["id"]]["family"] or row["split"] != suite[row["id"]]["split"]:
            errors.append(f"per_task {row['id']}: family/split differ from the suite")
    if errors:
        print("FAIL check_eval:", *errors[:20], sep="\n  ")
        return 1
    ok = sum(1 for r in rep["records"] if r["verdict"] == "OK")
    print(f"ok   {len(rep['records'])} records, {ok} OK; every aggregate recomputed "
          f"(pass@1 {rep['overall']['pass_at_k']['1'][0]:.3f}, Acc@{rep['turns']} {rep['overall']['acc'][-1]:.3f})")
    return 0


def same(a_path, b_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    errors = []
    for key in ("records", "overall", "by_split", "by_family", "per_task"):
        compare(key, a[key], b[key], errors)
    if errors:
        print("FAIL the two reports differ:", *errors[:20], sep="\n  ")
        return 1
    print(f"ok   identical records ({len(a['records'])}) and metrics")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
