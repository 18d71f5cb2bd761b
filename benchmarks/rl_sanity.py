#!/usr/bin/env python3
"""Does RL raise the reward on the prompts it trains on? The check under every learning claim.

RL trains the starting policy on 8 fixed tasks for --steps steps (configs/demo.ini otherwise: 4
tasks a step, G = 8, 3 turns, temperature 0.5, lr 1e-5), and `leap eval` measures the turn-1
pass rate of the same 8 tasks before and after (--samples answers each, one turn, the evaluation
seeded with the run's seed). The tasks are combinations the demo policy never saw in SFT
(`tasks/make_families.py --fresh`) that it passes about half the time, so there is room both
ways. A pass rate that does not rise means the update does not follow the reward; one that rises
here while held-out accuracy does not (benchmarks/README.md, the paper's comparison) means RL
learns its prompts without generalising from them.

    /usr/bin/python3 benchmarks/rl_sanity.py --seeds 1 2 3 [--steps 30] [--samples 8]
        [--results benchmarks/results/rl_sanity] [--runs runs/rl_sanity] [-- leap train options]

Every finished evaluation is a JSON file under --results, with each run's per-step figures
(seedN_steps.csv; commit them); rerunning skips what is there.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from leap_trajectories import write_step_summary  # noqa: E402
from paper_compare import add_run_args, leap_cmd, parse_run_args  # noqa: E402  (this folder)

# Fresh elementwise combinations on which the demo policy v2 passed 2 to 6 of 8 turn-1 answers
# in an RL run's first steps (benchmarks/README.md, ninth run).
TASKS = ["F/elementwise/uu_gauss_tanh_f16", "F/elementwise/bu_gelu_add_f32",
         "F/elementwise/bs_sin_add_f32", "F/elementwise/bu_silu_add_bf16",
         "F/elementwise/bu_silu_max_bf16", "F/elementwise/ub_square_mul_f16",
         "F/elementwise/ub_sigmoid_min_f16", "F/elementwise/ub_elu_add_f32"]


def fail(message):
    print(f"rl_sanity.py: {message}", file=sys.stderr)
    sys.exit(2)


def suites(args):
    """RUNS/train.jsonl (the 8 tasks, split train) and RUNS/eval.jsonl (the same, split heldout)."""
    fresh = os.path.join(args.runs, "fresh.jsonl")
    if not os.path.exists(fresh):
        subprocess.run([sys.executable, os.path.join(args.root, "tasks", "make_families.py"), "--fresh", fresh],
                       check=True, stdout=subprocess.DEVNULL)
    by_id = {}
    with open(fresh) as f:
        for line in f:
            t = json.loads(line)
            by_id[t["id"]] = t
    missing = [i for i in TASKS if i not in by_id]
    if missing:
        fail(f"{fresh} lacks {missing}: delete it and rerun (make_families.py changed)")
    paths = {}
    for name, split in (("train", "train"), ("eval", "heldout")):
        paths[name] = os.path.join(args.runs, name + ".jsonl")
        with open(paths[name] + ".tmp", "w") as f:
            f.writelines(json.dumps(dict(by_id[i], split=split)) + "\n" for i in TASKS)
        os.replace(paths[name] + ".tmp", paths[name])
    return paths


def leap(args, sub, *rest):
    cmd = leap_cmd(args, sub, *rest)
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL if sub == "eval" else None)


def pass_rate(args, model, seed, out, eval_suite):
    """Turn-1 pass rate of the 8 tasks, and the passes per task."""
    if not os.path.exists(out):
        leap(args, "eval", f"--model={model}", f"--suite={eval_suite}", "--split=heldout",
             f"--eval.samples={args.samples}", "--eval.turns=1", f"--run.seed={seed}",
             f"--eval.output={out}", "--log.level=warn")
    with open(out) as f:
        report = json.load(f)
    # A result of other settings is not reused under this run's header: the model (by its last
    # path part: the starting folder, or step_N of the run's checkpoints), answers, turns, seed.
    have = (os.path.basename(os.path.normpath(report["model"])), report["samples_per_task"], report["turns"],
            report["seed"])
    want = (os.path.basename(os.path.normpath(model)), args.samples, 1, seed)
    if have != want:
        fail(f"{out} holds (model, samples, turns, seed) = {have}, this run asks for {want}: "
             "give another --results (and --runs) folder, or delete it to measure again")
    return report["overall"]["acc"][0], [t["correct_by_turn"][0] for t in report["per_task"]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--samples", type=int, default=8)
    add_run_args(p, "benchmarks/results/rl_sanity", "runs/rl_sanity")
    args = parse_run_args(p)
    paths = suites(args)
    rows = []
    for seed in args.seeds:
        run_dir = os.path.join(args.runs, f"seed{seed}")
        ckpt = os.path.join(run_dir, "checkpoints", "step_%06d" % (args.steps - 1))
        start = pass_rate(args, args.model, seed, os.path.join(args.results, f"seed{seed}_start.json"),
                          paths["eval"])
        end_json = os.path.join(args.results, f"seed{seed}_end.json")
        # How the run was trained, beside its result: a rerun with another config or other leap
        # options is refused rather than reported under them (results from before this record
        # are taken as they are).
        trained = dict(config=args.config, steps=args.steps, extra=args.extra)
        trained_json = os.path.join(args.results, f"seed{seed}_train.json")
        if os.path.exists(trained_json):
            with open(trained_json) as f:
                if json.load(f) != trained:
                    fail(f"{trained_json}: seed {seed} was trained with other settings than {trained}: give another "
                         "--results and --runs folder, or delete them to train again")
        if not os.path.exists(end_json) and not os.path.exists(ckpt):
            leap(args, "train", f"--model={args.model}", f"--tasks.suite={paths['train']}",
                 f"--run.out_dir={run_dir}", f"--run.seed={seed}", f"--train.steps={args.steps}",
                 f"--train.checkpoint_every={args.steps}", "--resume=auto", *args.extra)
            if not os.path.exists(ckpt):
                fail(f"{ckpt} is missing after training: {run_dir} holds a longer run; give another --runs folder")
            with open(trained_json, "w") as f:
                json.dump(trained, f)
        end = pass_rate(args, ckpt, seed, end_json, paths["eval"])
        traj = os.path.join(run_dir, "trajectories.h5")
        if os.path.exists(traj):  # per-step figures beside the evaluations
            write_step_summary(traj, os.path.join(args.results, f"seed{seed}_steps.csv"))
        rows.append((seed, start, end))

    print(f"\nturn-1 pass rate of the {len(TASKS)} RL tasks, {args.samples} answers each, before and "
          f"after {args.steps} RL steps on them\n")
    print("| seed | before | after | passes per task, before -> after |")
    print("|---|---|---|---|")
    for seed, (a, pa), (b, pb) in rows:
        print(f"| {seed} | {a:.3f} | {b:.3f} | {pa} -> {pb} |")
    gain = np.array([b[0] - a[0] for _, a, b in rows])
    print(f"\ngain: {gain.mean():+.3f} ± {(gain.max() - gain.min()) / 2:.3f} (mean ± half-range over "
          f"{len(rows)} seed(s))")


if __name__ == "__main__":
    main()
