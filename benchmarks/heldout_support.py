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
    """The tasks with a passing sample at any turn in one `leap eval` JSON, id -> family (as the
    evaluation records it)."""
    try:
        with open(path) as f:
            per_task = json.load(f)["per_task"]
        return {t["id"]: t["family"] for t in per_task if sum(t["correct_by_turn"]) > 0}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{path}: not a leap eval result with per_task records ({e}); pass the JSON that "
              "`leap eval --eval.output` wrote", file=sys.stderr)
        sys.exit(2)


def by_family(ids, families):
    return dict(sorted(collections.Counter(families[i] for i in ids).items()))


def start_support(solved):
    """Each start evaluation's count and what it alone adds over the others; and their union."""
    sets = [set(s) for s in solved]
    union = set().union(*sets)
    alone = [len(s - set().union(*(o for j, o in enumerate(sets) if j != i))) for i, s in enumerate(sets)]
    return {"solved": [len(s) for s in sets], "union": len(union), "alone": alone}, union


def end_support(solved, start_union, families):
    union = set().union(*(set(s) for s in solved))
    new, lost = union - start_union, start_union - union
    return {"solved": [len(s) for s in solved], "union": len(union), "new": len(new), "lost": len(lost),
            "new_by_family": by_family(new, families), "lost_by_family": by_family(lost, families),
            "new_tasks": sorted(new)}


def family_cell(counts):
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


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

    start_solved = [solved_tasks(f) for f in args.start]
    end_solved = [(name, [solved_tasks(f) for f in files]) for name, files in ends]
    families = {}  # every solved task's family, from whichever evaluation solved it
    for solved in start_solved + [s for _, evals in end_solved for s in evals]:
        families.update(solved)
    start, start_union = start_support(start_solved)
    rows = [(name, end_support(evals, start_union, families)) for name, evals in end_solved]
    if args.format == "json":
        json.dump({"start": start, "ends": dict(rows)}, sys.stdout, indent=1)
        print()
        return
    print(f"start: solved {start['solved']} (each evaluation), {start['union']} in their union; "
          f"solved by one evaluation and no other: {start['alone']}\n")
    print("| run | solved (each evaluation) | union | new | lost | new by family | lost by family |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {', '.join(map(str, r['solved']))} | {r['union']} | {r['new']} | {r['lost']} | "
              f"{family_cell(r['new_by_family'])} | {family_cell(r['lost_by_family'])} |")


if __name__ == "__main__":
    main()
