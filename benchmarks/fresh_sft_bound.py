#!/usr/bin/env python3
"""How far could RL on the fresh combinations move held-out accuracy at best? A supervised bound.

RL on the 785 elementwise combinations that no split shows (`tasks/make_families.py --fresh`)
did not raise held-out accuracy (benchmarks/README.md, ninth run). This asks what the same prompts
give when the policy is simply shown every one's correct answer: one epoch of SFT from the demo
policy v2 on their references (benchmarks/fresh_sft_bound.ini), then the held-out evaluation that
paper_compare.py makes of the starting policy (every held-out task, n = --eval-samples, up to
--eval-turns turns, configs/demo.ini, at each --seeds evaluation seed), against the stored
evaluations of the starting policy (--start-results, start-seedN-full.json; made when missing).

If the supervised answers move held-out Acc@3 by less than the RL target, RL on these prompts
cannot be expected to reach it: RL learns from its own samples, a weaker signal than the answer.

--sft-suite asks the same of other RL prompts: its train tasks' references are the supervised
material instead (for example the RL part of `tasks/split_sft_rl.py`, from a policy trained on
the SFT part: --model that policy; the steps of one epoch after `--`, --train.steps and
--optim.total_steps). The report then gives every family's held-out Acc@3.

    /usr/bin/python3 benchmarks/fresh_sft_bound.py --seeds 1 2 3
        [--results benchmarks/results/fresh_sft_bound] [--runs runs/fresh_sft_bound]
        [--start-results benchmarks/results/paper_compare_fixed_suite] [--sft-suite SUITE]
        [-- leap train options]

Each evaluation is a JSON file under --results, and summary.json holds the table's figures
(commit them); rerunning skips what is there.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from paper_compare import add_run_args, evaluate, leap_cmd, parse_run_args  # noqa: E402  (this folder)

def family_acc3(path):
    """Held-out Acc@3 of each family in an evaluation's report."""
    with open(path) as f:
        report = json.load(f)
    return {family: v["acc"][min(2, len(v["acc"]) - 1)] for family, v in report["by_family"].items()}


def train_families(suite):
    """The families of a suite's train tasks: the families the supervised material teaches."""
    with open(suite) as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    return sorted({t.get("family", "") for t in tasks if t.get("split") == "train"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="evaluation seeds")
    p.add_argument("--suite", default="tasks/families.jsonl")
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--eval-turns", type=int, default=3)
    p.add_argument("--sft-config", default="benchmarks/fresh_sft_bound.ini")
    p.add_argument("--sft-np", type=int, default=2, help="ranks of the SFT run")
    p.add_argument("--start-results", default="benchmarks/results/paper_compare_fixed_suite",
                   help="where the starting policy's evaluations are (start-seedN-full.json)")
    p.add_argument("--sft-suite", help="the suite whose train tasks' references are the SFT material "
                   "(default: the fresh elementwise combinations, made under --runs)")
    add_run_args(p, "benchmarks/results/fresh_sft_bound", "runs/fresh_sft_bound")
    args = parse_run_args(p)

    fresh = args.sft_suite or os.path.join(args.runs, "fresh.jsonl")
    if args.sft_suite and not os.path.isfile(fresh):
        sys.exit(f"--sft-suite {fresh}: no such file (tasks/split_sft_rl.py writes an RL part, for example)")
    if not os.path.exists(fresh):
        subprocess.run([sys.executable, os.path.join(args.root, "tasks", "make_families.py"), "--fresh", fresh],
                       check=True, stdout=subprocess.DEVNULL)
    policy = os.path.join(args.runs, "policy")
    trained = dict(sft_config=args.sft_config, extra=args.extra)
    if args.sft_suite:  # (absent from the stored settings of the default material)
        trained["sft_suite"] = args.sft_suite
    trained_json = os.path.join(args.results, "trained.json")
    if os.path.exists(trained_json):
        with open(trained_json) as f:
            if json.load(f) != trained:
                sys.exit(f"{trained_json}: the policy was trained with other settings than {trained}: give another "
                         "--results and --runs folder, or delete them to train again")
    if not os.path.exists(os.path.join(policy, "model.safetensors")):
        cmd = [os.path.join(args.root, "scripts", "mpirun_local.sh"), str(args.sft_np), args.leap, "train",
               "--config", args.sft_config, f"--model.path={args.model}", f"--tasks.suite={fresh}",
               f"--run.out_dir={os.path.join(args.runs, 'run')}", f"--sft.save_to={policy}", *args.extra]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        with open(trained_json, "w") as f:
            json.dump(trained, f)

    families = train_families(fresh)
    rows = []
    for seed in args.seeds:
        start_json = os.path.join(args.start_results, f"start-seed{seed}-full.json")
        end_json = os.path.join(args.results, f"sft-seed{seed}-full.json")
        start = evaluate(args, args.model, seed, start_json, args.suite)
        end = evaluate(args, policy, seed, end_json, args.suite)
        for r, path in ((start, start_json), (end, end_json)):
            by_family = family_acc3(path)
            if len(families) == 1:  # one family taught: its column under the name the first bound used
                r["family_acc3"] = by_family[families[0]]
            else:
                r.update({f"acc3_{family}": acc for family, acc in by_family.items()})
        rows.append((seed, start, end))

    keys = [("acc1", "Acc@1"), ("acc3", "Acc@3"), ("acc3_macro", "Acc@3 macro"), ("acc3_clean", "Acc@3 clean")]
    if len(families) == 1:
        keys.append(("family_acc3", f"Acc@3 {families[0]}"))
    else:
        keys += [(f"acc3_{family}", f"Acc@3 {family}") for family in families]
    keys = [(k, name) for k, name in keys if all(k in r[1] and k in r[2] for r in rows)]
    steps = " ".join(args.extra) or "the config's steps"
    print(f"\nheld-out tasks of {args.suite}, before -> after SFT ({steps}) on the references of "
          f"{fresh}'s train tasks ({', '.join(families)}; {args.eval_samples} answers, up to "
          f"{args.eval_turns} turns)\n")
    print("| eval seed | " + " | ".join(name for _, name in keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for seed, a, b in rows:
        print(f"| {seed} | " + " | ".join(f"{a[k]:.3f} -> {b[k]:.3f}" for k, _ in keys) + " |")
    summary = {"seeds": args.seeds, "suite": args.suite, "model": args.model, "policy": policy, "changes": {}}
    for k, name in keys:
        d = np.array([b[k] - a[k] for _, a, b in rows])
        summary["changes"][k] = {"mean": float(d.mean()), "half_range": float((d.max() - d.min()) / 2),
                                 "by_seed": [float(x) for x in d]}
        print(f"change in {name}: {d.mean():+.3f} ± {(d.max() - d.min()) / 2:.3f} (mean ± half-range over "
              f"{len(rows)} seed(s))")
    with open(os.path.join(args.results, "summary.json.tmp"), "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(os.path.join(args.results, "summary.json.tmp"), os.path.join(args.results, "summary.json"))


if __name__ == "__main__":
    main()
