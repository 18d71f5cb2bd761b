#!/usr/bin/env python3
"""Which held-out tasks a policy solves at all, before and after RL: the support of `leap eval`
results, read from their per-task records.

    benchmarks/heldout_support.py --start START.json [START.json ...] \
        --end NAME=END.json[,END.json ...] [--end ...] [--format markdown|json]

A task is solved by an evaluation when any of its samples passes at any turn. For the start's
evaluations (one per sampling seed) it prints each one's count, their union, and how many tasks
each one solves that the others do not: what one more evaluation adds by chance alone. For each
--end (the evaluations of one RL run's end, comma-separated) it prints each evaluation's count,
their union, the tasks of that union the start's union lacks ("new") and the start's tasks it
lacks ("lost"), by family. Held-out Acc@3 can rise either way: by solving new tasks, or by
solving the same tasks in more samples; this tells them apart.

Run with /usr/bin/python3 (or any Python 3).
"""
import argparse
import collections
import json
import sys


def solved_tasks(path):
    """The ids of the tasks with a passing sample at any turn in one `leap eval` JSON."""
    try:
        with open(path) as f:
            per_task = json.load(f)["per_task"]
        return {t["id"] for t in per_task if sum(t["correct_by_turn"]) > 0}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{path}: not a leap eval result with per_task records ({e}); pass the JSON that "
              "`leap eval --eval.output` wrote", file=sys.stderr)
        sys.exit(2)


def family(task_id):
    parts = task_id.split("/")
    return parts[1] if len(parts) > 2 else "?"


def by_family(ids):
    return dict(sorted(collections.Counter(family(i) for i in ids).items()))


def start_support(sets):
    """Each start evaluation's count and what it alone adds over the others."""
    union = set().union(*sets)
    alone = [len(s - set().union(*(o for j, o in enumerate(sets) if j != i))) for i, s in enumerate(sets)]
    return {"solved": [len(s) for s in sets], "union": len(union), "alone": alone}, union


def end_support(sets, start_union):
    union = set().union(*sets)
    new, lost = union - start_union, start_union - union
    return {"solved": [len(s) for s in sets], "union": len(union), "new": len(new), "lost": len(lost),
            "new_by_family": by_family(new), "lost_by_family": by_family(lost), "new_tasks": sorted(new)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--start", nargs="+", required=True, help="the starting policy's evaluations")
    p.add_argument("--end", action="append", default=[], metavar="NAME=FILE[,FILE...]",
                   help="one RL run's end evaluations")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    args = p.parse_args()
    ends = []
    for spec in args.end:
        name, sep, files = spec.partition("=")
        if not sep or not name or not files:
            p.error(f"--end {spec!r}: write NAME=FILE[,FILE...]")
        ends.append((name, files.split(",")))

    start, start_union = start_support([solved_tasks(f) for f in args.start])
    rows = [(name, end_support([solved_tasks(f) for f in files], start_union)) for name, files in ends]
    if args.format == "json":
        json.dump({"start": start, "ends": dict(rows)}, sys.stdout, indent=1)
        print()
        return
    print(f"start: solved {start['solved']} (each evaluation), {start['union']} in their union; "
          f"solved by one evaluation and no other: {start['alone']}\n")
    print("| run | solved (each evaluation) | union | new | lost | new by family | lost by family |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        fam = lambda d: ", ".join(f"{k} {v}" for k, v in d.items()) or "-"  # noqa: E731
        print(f"| {name} | {', '.join(map(str, r['solved']))} | {r['union']} | {r['new']} | {r['lost']} | "
              f"{fam(r['new_by_family'])} | {fam(r['lost_by_family'])} |")


if __name__ == "__main__":
    main()
