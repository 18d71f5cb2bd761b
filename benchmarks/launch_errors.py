#!/usr/bin/env python3
"""What the launch errors of an evaluation hide: how many turn-1 answers of a `leap eval` report
(its `records`) fail because a launch line names a kernel the code does not define, what the next
turn of those samples gave, and, with --oracle, what each of them would be judged with the name
spelt right.

    /usr/bin/python3 benchmarks/launch_errors.py EVAL.json [EVAL.json ...]
    /usr/bin/python3 benchmarks/launch_errors.py --oracle --suite runs/split2/rl.jsonl EVAL.json

The oracle renames the kernel of every launch line to the one `__global__` function the code
declares (answers that declare none or several are counted apart) and judges the answer again
with `leap check` on the CPU, one answer at a time: the same sandbox as training's, so a verdict
here is what the policy would have been told. It is a reading of the policy, not a fix: the
answer itself is never changed in a run.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

NAME_ERROR = "defines no __global__ kernel"
# The name before the parameter list of each __global__ function; a plain scan, as the
# sandbox's own (src/sandbox/launch_plan.cpp).
DECLARED = re.compile(r"__global__\s+(?:[\w:]+\s+)*?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")
LAUNCH = re.compile(r"(//\s*launch:\s*)([\w:]+)")


def declared_kernels(text):
    return [n for n in dict.fromkeys(m.group(1) for m in DECLARED.finditer(text)) if n != "__launch_bounds__"]


def check(leap, suite, task, answer):
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(answer)
        f.flush()
        p = subprocess.run([leap, "check", f"--suite={suite}", f"--task={task}", f"--answer={f.name}",
                            "--device=cpu"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"leap check failed on {task} (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)["verdict"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("evals", nargs="+", help="leap eval reports (JSON with records)")
    ap.add_argument("--oracle", action="store_true", help="judge each name-error answer with its name spelt right")
    ap.add_argument("--leap", default="build/src/apps/leap")
    ap.add_argument("--suite", help="the suite the evaluation used (for --oracle)")
    args = ap.parse_args()
    if args.oracle and not args.suite:
        sys.exit("--oracle needs --suite: the suite the evaluation was made on")
    if args.oracle and not os.path.exists(args.leap):
        sys.exit(f"{args.leap} is not built: run scripts/build.sh, or pass --leap")
    for path in args.evals:
        with open(path) as f:
            report = json.load(f)
        if "records" not in report:
            sys.exit(f"{path} has no records: it is not a leap eval report")
        by_key = {(r["task"], r["sample"], r["turn"]): r for r in report["records"]}
        first = [r for r in report["records"] if r["turn"] == 1]
        launch = [r for r in first if r["verdict"] == "LAUNCH_ERROR"]
        named = [r for r in launch if NAME_ERROR in (r.get("feedback") or "")]
        after = collections.Counter()
        for r in named:
            nxt = by_key.get((r["task"], r["sample"], 2))
            if nxt is None:
                after["no turn 2"] += 1
            else:
                after["the same name error" if NAME_ERROR in (nxt.get("feedback") or "") else nxt["verdict"]] += 1
        print(f"{path}: {len(first)} turn-1 answers, {sum(r['verdict'] == 'OK' for r in first)} OK, "
              f"{len(launch)} LAUNCH_ERROR, {len(named)} of them a kernel name the code does not define")
        print(f"  their turn 2: {dict(after.most_common())}")
        if not args.oracle:
            continue
        judged = collections.Counter()
        passed = []
        for r in named:
            names = declared_kernels(r["completion"])
            if len(names) != 1:
                judged["declares none or several kernels"] += 1
                continue
            fixed = LAUNCH.sub(lambda m: m.group(1) + names[0], r["completion"])
            verdict = check(args.leap, args.suite, r["task"], fixed)
            judged[verdict] += 1
            if verdict == "OK":
                passed.append(r["task"])
        print(f"  with the name spelt right: {dict(judged.most_common())}")
        print(f"  OK then: {', '.join(sorted(passed)) or 'none'}")


if __name__ == "__main__":
    main()
