#!/usr/bin/env python3
"""The paper's comparison, re-evaluated on the held-out split of the suite as it is now.

paper_compare.py's stored evaluations are of the split they were made on (110 held-out tasks until
2026-12-05). This script takes the runs they came from (their last checkpoints, kept in --runs),
evaluates the starting policy and every run's last checkpoint on every held-out task of --suite,
each at the run's seed as paper_compare.py does (n = 2, 3 turns), and prints the RL gain in Acc@3
per way, mean ± half-range over the seeds, on all held-out tasks, on those tasks/audit_heldout.py
keeps as new, and on those drawn after the first 110 (which no review has read either way).
Evaluations are stored in --results and reused (one recording other tasks, another seed or another
model is refused), so an interrupted pass continues. The runs' own settings are not checked: pass
the --config they were trained with (paper_compare.py's default, configs/demo.ini, here too).

    /usr/bin/python3 benchmarks/heldout_reeval.py --runs runs/paper_compare_tempered \
        --results benchmarks/results/heldout_reeval_tempered --ways leap unpruned single --seeds 1 2 3
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "tasks"))
import paper_compare as pc  # noqa: E402
import audit_heldout  # noqa: E402


def per_task_acc3(report):
    return {t["id"]: t["acc"][min(2, len(t["acc"]) - 1)] for t in report["per_task"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    pc.add_run_args(p, "benchmarks/results/heldout_reeval", "runs/paper_compare_tempered")
    p.add_argument("--suite", default="tasks/families.jsonl")
    p.add_argument("--ways", nargs="+", default=["leap", "unpruned", "single"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--steps", type=int, default=40, help="the runs' length: their last checkpoint is step STEPS-1")
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--eval-turns", type=int, default=3)
    args = pc.parse_run_args(p)
    # The audit and the two held-out draws are of the suite make_families.py writes: --suite must
    # hold the same held-out tasks.
    flagged, _, _ = audit_heldout.audit()
    mf = audit_heldout.mf
    first, later = set(), set()
    for name, combos, heldout, n_train, n_held, build in mf.FAMILIES:
        _, held = mf.select(name, combos(), heldout, n_train, n_held, mf.HELDOUT_EXTRA[name])
        ids = [build(c).obj["id"] for c in held]
        first.update(ids[:n_held])
        later.update(ids[n_held:])
    every = set(pc.heldout_ids(args.suite) or [])
    if every != first | later:
        sys.exit(f"--suite {args.suite} does not hold the held-out tasks tasks/make_families.py draws "
                 "(the audit and the draws are of that suite): evaluate tasks/families.jsonl")
    groups = {"all": every, "clean": every - set(flagged), "drawn after the first 110": later}
    assert not later & set(flagged), "the draw after the first takes no flagged task"

    def acc3(report, ids):
        a = per_task_acc3(report)
        return float(np.mean([a[i] for i in ids]))

    rows = {}
    for seed in args.seeds:
        start = os.path.join(args.results, f"start-seed{seed}.json")
        pc.evaluate(args, args.model, seed, start, args.suite)
        with open(start) as f:
            start_report = json.load(f)
        for way in args.ways:
            ckpt = os.path.join(args.runs, f"{way}-seed{seed}", "checkpoints", "step_%06d" % (args.steps - 1))
            if not os.path.isdir(ckpt):
                sys.exit(f"{ckpt} is not here: heldout_reeval.py evaluates runs kept on this machine")
            out = os.path.join(args.results, f"{way}-seed{seed}.json")
            pc.evaluate(args, ckpt, seed, out, args.suite)
            with open(out) as f:
                end_report = json.load(f)
            rows.setdefault(way, []).append(
                {g: (acc3(start_report, ids), acc3(end_report, ids)) for g, ids in groups.items()})
    print(f"held-out Acc@3, start -> step {args.steps} (gain), mean ± half-range over seeds {args.seeds}:")
    print("| way | " + " | ".join(f"{g} ({len(ids)} tasks)" for g, ids in groups.items()) + " |")
    print("|---|" + "---|" * len(groups))
    for way, runs in rows.items():
        cells = []
        for g in groups:
            s, e = [r[g][0] for r in runs], [r[g][1] for r in runs]
            cells.append(f"{pc.mean_spread(s)} -> {pc.mean_spread(e)} ({pc.mean_spread(np.subtract(e, s))})")
        print(f"| {way} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
