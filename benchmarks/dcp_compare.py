#!/usr/bin/env python3
"""Evidence that DCP pays: the same step budget run three ways, several seeds each.

    benchmarks/dcp_compare.py --steps 20 --seeds 1 2 3 --out runs/dcp_compare20
        [--np 4] [--config configs/demo_v1.ini] [--leap build/src/apps/leap] [--eval-samples 8]
        [-- extra leap options]

Ways: `static` (DCP static, the paper's setting), `off` (every group with a failure expanded:
the unpruned multi-turn baseline) and `single` (max_turns = 1: single-turn GRPO). Same B, G and
seeds for all. Prints a Markdown table (sandbox jobs per step, time per step, turn-1 and final
pass rates on the train tasks: mean ± half-range over seeds), the histogram of failures per group
after turn 1, and writes pass rate against wall-clock time as a PNG next to the runs.
Each run's final policy is then evaluated on the held-out tasks with `leap eval` (Acc@1 and
Acc@turns with sandbox feedback; --eval-samples per task, 0 skips it).
Run with /usr/bin/python3 (Debian's h5py, pandas and matplotlib).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

WAYS = {"static": ["--dcp.mode=static"], "off": ["--dcp.mode=off"], "single": ["--rl.max_turns=1"]}


def run_one(args, way, seed):
    out = os.path.join(args.out, f"{way}-seed{seed}")
    h5 = os.path.join(out, "trajectories.h5")
    # A cached run is reused only when it is complete (its last checkpoint is the last step) and
    # was trained with this config and these options (recorded beside it; runs from before the
    # record are taken as they are).
    trained = dict(config=args.config, options=[*WAYS[way], *args.extra])
    record = os.path.join(out, "dcp_compare.json")
    if os.path.exists(record):
        with open(record) as f:
            if json.load(f) != trained:
                sys.exit(f"{out} was trained with other settings than {trained}: use another --out")
    ckpt = os.path.join(out, "checkpoints", "step_%06d" % (args.steps - 1))
    if not os.path.exists(ckpt):
        cmd = [os.path.join(args.root, "scripts", "mpirun_local.sh"), str(args.np), args.leap, "train",
               "--config", args.config, f"--run.out_dir={out}", f"--run.seed={seed}",
               f"--train.steps={args.steps}", "--resume=auto", *WAYS[way], *args.extra]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        if not os.path.exists(ckpt):
            sys.exit(f"{ckpt} is missing after training: {out} holds a longer run; use another --out")
        with open(record, "w") as f:
            json.dump(trained, f)
    run = load_run(h5, with_text=False)
    # A longer run in the folder: its first --steps, in the tables and the histogram alike.
    run.steps = run.steps[run.steps.step < args.steps]
    run.samples = run.samples[run.samples.step < args.steps]
    return run


def eval_one(args, way, seed):
    """Acc@1 and Acc@final of the run's last checkpoint on the held-out tasks (leap eval)."""
    out = os.path.join(args.out, f"{way}-seed{seed}")
    report = os.path.join(out, "eval_heldout.json")
    if not os.path.exists(report):
        ckpt = os.path.join(out, "checkpoints", "step_%06d" % (args.steps - 1))
        cmd = [os.path.join(args.root, "scripts", "mpirun_local.sh"), str(args.np), args.eval_leap or args.leap, "eval",
               "--config", args.config, f"--model={ckpt}", "--split=heldout", f"--eval.samples={args.eval_samples}",
               f"--eval.output={report}", f"--run.seed={seed}", "--log.level=warn"]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        r = json.load(f)
    ckpt = "step_%06d" % (args.steps - 1)
    if (r["samples_per_task"], r["seed"], os.path.basename(os.path.normpath(r["model"]))) != (args.eval_samples, seed, ckpt):
        sys.exit(f"{report} holds (samples, seed, checkpoint) = ({r['samples_per_task']}, {r['seed']}, {r['model']}), "
                 f"this run asks for ({args.eval_samples}, {seed}, {ckpt}): delete it to evaluate again, or use "
                 "another --out")
    acc = r["overall"]["acc"]
    return acc[0], acc[-1]


def mean_spread(values):
    """Mean ± half-range over seeds, as the other benchmarks report it."""
    v = np.asarray(values, dtype=float)
    return f"{v.mean():.3g} ± {(v.max() - v.min()) / 2:.2g}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--out", default="runs/dcp_compare")
    p.add_argument("--config", default="configs/demo_v1.ini")
    p.add_argument("--leap", default="build/src/apps/leap")
    p.add_argument("--eval-samples", type=int, default=8)
    p.add_argument("--eval-leap", default="", help="the leap binary for the evaluations (default: --leap)")
    p.add_argument("extra", nargs="*")
    args = p.parse_args()
    args.root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    os.makedirs(args.out, exist_ok=True)

    # Seed by seed, so that an interrupted benchmark leaves whole seeds behind (runs are cached).
    by_seed = {s: {way: run_one(args, way, s) for way in WAYS} for s in args.seeds}
    runs = {way: [by_seed[s][way] for s in args.seeds] for way in WAYS}
    held = {way: [eval_one(args, way, s) for s in args.seeds] for way in WAYS} if args.eval_samples > 0 else None
    print(f"\n{args.steps} steps, seeds {args.seeds}, config {args.config}\n")
    print("| way | sandbox jobs / step | time / step (s) | pass turn 1 (mean of steps) | pass final (mean of steps) |"
          " pass final (last step) | heldout Acc@1 | heldout Acc@final |")
    print("|---|---|---|---|---|---|---|---|")
    jobs = {}
    for way, rs in runs.items():
        jobs[way] = np.mean([r.steps["n_sandbox_jobs"].mean() for r in rs])
        print(f"| {way} | {mean_spread([r.steps['n_sandbox_jobs'].mean() for r in rs])} | "
              f"{mean_spread([r.steps['time_s'].mean() for r in rs])} | "
              f"{mean_spread([r.steps['pass_turn1'].mean() for r in rs])} | "
              f"{mean_spread([r.steps['pass_final'].mean() for r in rs])} | "
              f"{mean_spread([r.steps['pass_final'].iloc[-1] for r in rs])} | "
              + (f"{mean_spread([h[0] for h in held[way]])} | {mean_spread([h[1] for h in held[way]])} |"
                 if held else "- | - |"))
    if jobs["off"] > 0:
        print(f"\nDCP static runs {100 * (1 - jobs['static'] / jobs['off']):.1f}% fewer sandbox jobs per step than DCP off")
        # By seed and by half of the budget: is the saving steady, or does it move as RL trains?
        def saving(sl, seeds):
            st = np.mean([runs["static"][i].steps.n_sandbox_jobs.iloc[sl].mean() for i in seeds])
            off = np.mean([runs["off"][i].steps.n_sandbox_jobs.iloc[sl].mean() for i in seeds])
            return f"{100 * (1 - st / off):.1f}%"
        every, half = range(len(args.seeds)), args.steps // 2
        print("  by seed: " + ", ".join(f"seed {s} {saving(slice(None), [i])}" for i, s in enumerate(args.seeds)))
        if half > 0:
            print(f"  steps 1-{half}: {saving(slice(0, half), every)}, "
                  f"steps {half + 1}-{args.steps}: {saving(slice(half, None), every)}")
    print("\nwall-clock time for the whole budget (s): " + ", ".join(
        f"{way} {mean_spread([r.steps['time_s'].sum() for r in rs])}" for way, rs in runs.items()))

    # Failures per group after turn 1 (all ways sample turn 1 the same way).
    fails = []
    for r in runs["off"]:
        t1 = r.samples[r.samples.turn == 1]
        fails += list(t1.assign(fail=t1.verdict != "OK").groupby(["step", "group"])["fail"].sum())
    if fails:
        g = int(max(fails))
        hist = np.bincount(np.asarray(fails, dtype=int), minlength=g + 1)
        print("\nfailures per group after turn 1 (count of groups):")
        for k, n in enumerate(hist):
            print(f"  {k:2d} | {'#' * int(n)} {n}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # Each step draws other tasks, so pass rates move with the draw as much as with training; the
    # ways draw the same tasks at the same step (same seeds), so they compare step by step. Left:
    # pass rate against wall-clock time (each point a step, mean over seeds); middle: the same
    # against the step, where the ways see the same tasks; right: when each step finished.
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    colors = {"static": "C0", "off": "C1", "single": "C2"}
    for way, rs in runs.items():
        pass_final = np.mean([r.steps["pass_final"].to_numpy() for r in rs], axis=0)
        finished = np.mean([r.steps["time_s"].cumsum().to_numpy() for r in rs], axis=0)
        step = np.arange(1, len(pass_final) + 1)
        axes[0].plot(finished, pass_final, marker="o", markersize=3, color=colors[way], label=way)
        axes[1].plot(step, pass_final, marker="o", markersize=3, color=colors[way], label=way)
        axes[2].plot(step, finished, marker="o", markersize=3, color=colors[way], label=way)
    axes[0].set_xlabel("wall-clock time (s)")
    axes[1].set_xlabel("step")
    axes[2].set_xlabel("step")
    for ax in axes[:2]:
        ax.set_ylabel(f"pass rate, final turn (mean of {len(args.seeds)} seeds)")
    axes[2].set_ylabel("wall-clock time at the end of the step (s)")
    for ax in axes:
        ax.legend()
    png = os.path.join(args.out, "pass_vs_time.png")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"\nplot: {png}")


if __name__ == "__main__":
    main()
