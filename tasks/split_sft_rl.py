#!/usr/bin/env python3
"""Splits a suite's train tasks into an SFT part and an RL part, so that RL trains on prompts the
starting policy never saw in supervision (as in practice: SFT data and RL prompts differ).

Within each family, every K-th train task (in suite order, from the first) goes to the RL part
and the others to the SFT part; the held-out tasks go to both files unchanged, so both read the
same held-out split. Writes OUT/sft.jsonl and OUT/rl.jsonl and prints the counts.

    /usr/bin/python3 tasks/split_sft_rl.py --suite tasks/families.jsonl --every 3 --out runs/split
"""

import argparse
import json
import os
import sys


def fail(message):
    print(f"split_sft_rl.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="tasks/families.jsonl")
    p.add_argument("--every", type=int, default=3, help="every K-th train task of a family goes to RL")
    p.add_argument("--out", required=True, help="folder for sft.jsonl and rl.jsonl")
    args = p.parse_args()
    if args.every < 2:
        fail(f"--every {args.every}: use 2 or more (1 would leave SFT no train task)")
    if not os.path.isfile(args.suite):
        fail(f"--suite {args.suite}: no such file (the suites are in tasks/, e.g. tasks/families.jsonl)")
    os.makedirs(args.out, exist_ok=True)
    seen = {}
    parts = {"sft": [], "rl": []}
    counts = {}
    with open(args.suite) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                task = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{args.suite}:{n}: not JSON ({e}); the suite holds one task object a line")
            line = line if line.endswith("\n") else line + "\n"
            if task.get("split") != "train":
                parts["sft"].append(line)
                parts["rl"].append(line)
                continue
            family = task.get("family", "")
            k = seen.get(family, 0)
            seen[family] = k + 1
            part = "rl" if k % args.every == 0 else "sft"
            parts[part].append(line)
            counts[(family, part)] = counts.get((family, part), 0) + 1
    for part, lines in parts.items():
        path = os.path.join(args.out, part + ".jsonl")
        with open(path + ".tmp", "w") as f:
            f.writelines(lines)
        os.replace(path + ".tmp", path)
    for family in sorted(seen):
        print(f"{family:14s} train tasks: sft {counts.get((family, 'sft'), 0):4d}  rl {counts.get((family, 'rl'), 0):4d}")
    print(f"{'all':14s} train tasks: sft {sum(v for (f, p), v in counts.items() if p == 'sft'):4d}  "
          f"rl {sum(v for (f, p), v in counts.items() if p == 'rl'):4d}  (held-out tasks in both)")


if __name__ == "__main__":
    main()
