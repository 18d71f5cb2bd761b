#!/usr/bin/env python3
"""The paper's comparison on the CPU, accumulated piece by piece: held-out Acc@1 and Acc@3
against the job's CPU-seconds and sandbox jobs, for several ways of running RL, with seeds.

    benchmarks/paper_compare.py --steps 40 --every 10 --seeds 1 2 3 --ways leap unpruned single
        [--extra-ways adaptive binary] [--np 4] [--config configs/demo.ini] [--suite FILE]
        [--heldout-per-family 4] [--eval-samples 2] [--eval-turns 3] [--resample] [--full-heldout
        [--full-eval-seeds 1 2 3]]
        [--results benchmarks/results/paper_compare] [--runs runs/paper_compare] [-- leap options]

RL trains on the train split of --suite; every evaluation uses the same held-out subset of it.
Ways (all with the same B, G, seeds and tasks):
  leap      DCP static, rank reward (the paper's method)
  unpruned  DCP off: every group with a failure gets debugging turns
  single    max_turns = 1: single-turn GRPO
  adaptive  DCP adaptive (dcp.budget = 8 expanded samples a step), rank reward
  binary    DCP static, binary reward
--resample turns dynamic sampling (rl.resample_zero_variance) on for every way; each result
records whether it was on.

Budgets are CPU-seconds of the whole job (`/steps cpu_s`: every rank and sandbox worker) and
sandbox jobs, never wall-clock time. Each run trains in segments of --every steps (`leap train
--resume auto` continues it), so no single command runs long, and after each segment its
checkpoint is evaluated with `leap eval` on a fixed held-out subset (the first
--heldout-per-family held-out tasks of every family, written once to RESULTS/heldout.jsonl); the
starting policy is evaluated once as step 0. The subset (28 tasks, 56 samples) is coarse, about
0.06 standard error: --full-heldout also evaluates the starting policy and each run's last
checkpoint on every held-out task of the suite, and the RL gain is then read there; one such
evaluation still varies about ±0.01-0.02 with its sampling seed, so --full-eval-seeds evaluates
both at several seeds and reads their mean (each run's own seed is the default). Every
finished evaluation is a JSON file under --results (commit them): rerunning skips what is there,
so the comparison grows piece by piece; a stored result made otherwise than asked (another
held-out subset, number of answers, turns, seed, tasks or policy; a point's way options, dynamic
sampling, leap options or config file's content) stops the script with its name instead of being
reused, and so does a run folder under --runs trained otherwise (each records its settings in
paper_compare_run.json; one with checkpoints and no record is refused). Points made before the
config was recorded are accepted with a warning. At the end it prints a Markdown table (mean ± spread over
seeds), the two targets' figures and leap's CPU-seconds and sandbox jobs over unpruned's at the
same steps, and draws the curves with bands (min-max over seeds) to RESULTS/curves.png. The
tables and the curves hold the seeds of this invocation only (the figure's title names them);
when RESULTS holds finished runs of other seeds it says which, and the --seeds that draws them
all: a comparison run seed by seed is drawn whole by listing every seed at the end.
Run with /usr/bin/python3 (Debian's h5py, pandas, numpy and matplotlib).
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from leap_trajectories import load_run, write_step_summary  # noqa: E402

WAYS = {
    "leap": ["--dcp.mode=static", "--rl.reward=rank"],
    "unpruned": ["--dcp.mode=off", "--rl.reward=rank"],
    "single": ["--rl.max_turns=1", "--rl.reward=rank"],
    # adaptive needs a budget: 8 expanded samples a step, one group's worth at the demo's G = 8.
    "adaptive": ["--dcp.mode=adaptive", "--dcp.budget=8", "--rl.reward=rank"],
    "binary": ["--dcp.mode=static", "--rl.reward=binary"],
}


def heldout_subset(args):
    """The first --heldout-per-family held-out tasks of each family, in file order. A subset left
    in --results by other settings (another suite, another count) is refused, not reused."""
    path = os.path.join(args.results, "heldout.jsonl")
    if os.path.exists(path) and not os.path.exists(args.suite):
        return path  # stored results reprinted without the (uncommitted) suite: nothing to check against
    taken, lines = {}, []
    with open(args.suite) as f:
        for line in f:
            t = json.loads(line)
            if t["split"] == "heldout" and taken.get(t["family"], 0) < args.heldout_per_family:
                taken[t["family"]] = taken.get(t["family"], 0) + 1
                lines.append(line if line.endswith("\n") else line + "\n")
    if os.path.exists(path):
        # The same tasks, whatever the audit's seen_in_train marks (written into the suite later):
        # a mark does not change what a task asks or how it is checked.
        def tasks_of(text_lines):
            return [{k: v for k, v in json.loads(x).items() if k != "seen_in_train"} for x in text_lines]

        with open(path) as f:
            if tasks_of(f.readlines()) != tasks_of(lines):
                sys.exit(f"{path} holds another held-out subset than --suite {args.suite} with "
                         f"--heldout-per-family {args.heldout_per_family} gives: use another --results")
    else:
        write_atomic(path, "".join(lines))
    return path


def write_atomic(path, text):
    """A file written whole or not at all: an interrupted write leaves no cut-short file behind."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def heldout_ids(suite):
    """The held-out task ids of a suite, or None when the file is not here to tell."""
    if not os.path.exists(suite):
        return None
    with open(suite) as f:
        return sorted(t["id"] for t in map(json.loads, f) if t["split"] == "heldout")


# Settings a stored result may lack because it was made before they were recorded: accepted,
# with a warning, since what they were cannot be checked (benchmarks/README.md gives each
# result's command). Every other asked setting must be in the stored result and equal.
LEGACY_UNRECORDED = ("config_sha256",)


def check_stored(path, stored, want):
    """Exits when a stored result was made with other settings than this run asks for, or does not
    record one of them (unless it is in LEGACY_UNRECORDED, which only warns)."""
    unrecorded = [k for k in want if k not in stored and k in LEGACY_UNRECORDED]
    if unrecorded:
        print(f"warning: {path} does not record {', '.join(unrecorded)} (made before it was recorded): "
              "not checked", file=sys.stderr)
    diff = {k: (stored.get(k, "(not recorded)"), v) for k, v in want.items()
            if k not in unrecorded and stored.get(k, "(not recorded)") != v}
    if diff:
        sys.exit(f"{path} was made with other settings ({', '.join(f'{k}: stored {s!r}, asked {w!r}' for k, (s, w) in diff.items())}): "
                 "move it aside, or use another --results")


def add_run_args(p, results, runs):
    """The options of every benchmark here that runs leap: ranks, config, starting policy, binary,
    the results and runs folders, and leap options after `--`."""
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--config", default="configs/demo.ini")
    p.add_argument("--model", default="models/demo-v2", help="the starting policy")
    p.add_argument("--leap", default="build/src/apps/leap")
    p.add_argument("--results", default=results)
    p.add_argument("--runs", default=runs)
    p.add_argument("extra", nargs="*")


def parse_run_args(p):
    args = p.parse_args()
    args.root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    os.makedirs(args.results, exist_ok=True)
    os.makedirs(args.runs, exist_ok=True)
    return args


def leap_cmd(args, sub, *rest):
    return [os.path.join(args.root, "scripts", "mpirun_local.sh"), str(args.np), args.leap, sub,
            "--config", args.config, *rest]


def evaluate(args, model, seed, out_json, subset):
    if os.path.exists(out_json):
        with open(out_json) as f:
            report = json.load(f)
        check_stored(out_json, report, {"seed": seed, "samples_per_task": args.eval_samples, "turns": args.eval_turns})
        # The tasks by id (a copied evaluation names another folder's subset file); the policy by
        # path, a checkpoint by its run and step.
        ids = heldout_ids(subset)
        if ids is not None:
            check_stored(out_json, {"tasks": sorted(t["id"] for t in report["per_task"])}, {"tasks": ids})
        # Up to the last three path parts of each (a path given absolute or relative alike).
        asked, stored = os.path.normpath(model).split(os.sep), os.path.normpath(report["model"]).split(os.sep)
        n = min(3, len(asked), len(stored))
        if asked[-n:] != stored[-n:]:
            sys.exit(f"{out_json} evaluated {report['model']}, not {model}: move it aside, or use another --results")
    else:
        cmd = leap_cmd(args, "eval", f"--model={model}", f"--suite={subset}", "--split=heldout",
                       f"--eval.samples={args.eval_samples}", f"--eval.turns={args.eval_turns}",
                       f"--eval.output={out_json}", f"--run.seed={seed}", "--log.level=warn")
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        report = json.load(f)
    acc = report["overall"]["acc"]
    fam = [v["acc"] for v in report["by_family"].values()]
    out = {"acc1": acc[0], "acc3": acc[min(2, len(acc) - 1)],
           "acc3_macro": float(np.mean([a[min(2, len(a) - 1)] for a in fam])) if fam else acc[-1]}
    # Acc@3 over the held-out tasks that are new combinations: those the suite (--suite, where the
    # marks are; an evaluation made before they were written has none) does not mark seen_in_train.
    marked = seen_in_train(args.suite)
    clean = [t["acc"][min(2, len(t["acc"]) - 1)] for t in report["per_task"] if t["id"] not in marked]
    if marked and clean:
        out["acc3_clean"] = float(np.mean(clean))
    return out


def seen_in_train(suite):
    """The ids of the suite's held-out tasks that it marks as not new (seen_in_train)."""
    if not os.path.exists(suite):
        return set()
    with open(suite) as f:
        return {t["id"] for t in map(json.loads, f) if t.get("seen_in_train")}


def full_heldout(args, seed, points, results, run_dir):
    """Adds acc*_full to the first and last points: the starting policy and the last checkpoint on
    every held-out task of the suite (the starting policy's evaluation is shared by the ways). With
    --full-eval-seeds each is the mean of the evaluations at those sampling seeds: one evaluation
    (n = 2 answers a task) varies about ±0.01-0.02 in Acc@3 with its seed alone, as much as the gains
    measured, so averaging leaves the spread over run seeds to the training."""
    ckpt = os.path.join(run_dir, "checkpoints", "step_%06d" % (args.steps - 1))
    files = full_eval_files(args, seed, results)
    for point, model, which in ((points[0], args.model, 0), (points[-1], ckpt, 1)):
        evals = [evaluate(args, model, eval_seed, paths[which], args.suite) for eval_seed, paths in files]
        point.update({k + "_full": float(np.mean([e[k] for e in evals])) for k in evals[0]
                      if all(k in e for e in evals)})


def full_eval_files(args, seed, results):
    """(evaluation seed, (the start's file, the end's file)) for each evaluation seed: the start's
    are shared by the ways; the end at the run's own seed keeps the name it always had."""
    def end(eval_seed):
        tail = "" if eval_seed == seed else f"-evalseed{eval_seed}"
        return os.path.join(results, f"eval_{args.steps}_full{tail}.json")
    return [(k, (os.path.join(args.results, f"start-seed{k}-full.json"), end(k)))
            for k in dict.fromkeys(args.full_eval_seeds or [seed])]


def usable_run_folder(run_dir, settings, points_done):
    """Whether run_dir may be trained in and read, checked (or, new, given its record) before
    anything trains there. A folder that is not here is of no use when every point is stored (a
    table reprinted elsewhere), and nothing is made for it."""
    if not os.path.exists(run_dir) and points_done:
        return False
    return check_run_folder(run_dir, settings, points_done)


def check_run_folder(run_dir, settings, points_done):
    """The run folder's recorded settings against the asked ones: a folder trained otherwise would
    be continued (leap's --resume checks only seed, suite, G, B, turns and the model's shape) or its
    checkpoints evaluated under the asked settings. Returns whether the folder may be used."""
    record = os.path.join(run_dir, "paper_compare_run.json")
    if os.path.exists(record):
        with open(record) as f:
            check_stored(record, json.load(f), settings)
        return True
    ckpts = os.path.join(run_dir, "checkpoints")
    if os.path.isdir(ckpts) and os.listdir(ckpts):
        if points_done:  # nothing to train or evaluate: only the per-step summary would be read
            print(f"warning: {run_dir} does not record its settings (made before they were recorded): "
                  "its steps.csv is not rewritten", file=sys.stderr)
            return False
        sys.exit(f"{run_dir} holds checkpoints of a run whose settings are not recorded: it cannot be told "
                 "apart from a run made otherwise; move it aside, or use another --runs")
    os.makedirs(run_dir, exist_ok=True)
    write_atomic(record, json.dumps(settings, indent=1) + "\n")
    return True


def run_way(args, way, seed, subset):
    """Trains in segments; evaluates each segment's checkpoint. Returns the points of the curve."""
    tag = f"{way}-seed{seed}"
    run_dir = os.path.join(args.runs, tag)
    results = os.path.join(args.results, tag)
    os.makedirs(results, exist_ok=True)
    flags = WAYS[way] + (["--rl.resample_zero_variance=true"] if args.resample else [])
    # What a point records and is checked against (--model is compared by the evaluations, where a
    # path may be spelt otherwise).
    settings = {"way": way, "seed": seed, "resample": args.resample, "flags": flags,
                "extra": [x for x in args.extra if not x.startswith("--model=")],
                "config_sha256": file_sha256(args.config)}
    points_done = points_stored(results, args.steps, args.every)
    run_usable = usable_run_folder(run_dir, {**settings, "suite": args.suite}, points_done)
    points = [dict(step=0, cpu_s=0.0, sandbox_jobs=0,
                   **evaluate(args, args.model, seed, os.path.join(results, "eval_0.json"), subset))]
    for end in range(args.every, args.steps + 1, args.every):
        point = os.path.join(results, f"point_{end}.json")
        if not os.path.exists(point):
            ckpt = os.path.join(run_dir, "checkpoints", "step_%06d" % (end - 1))
            if not os.path.exists(ckpt):
                cmd = leap_cmd(args, "train", f"--run.out_dir={run_dir}", f"--run.seed={seed}",
                               f"--tasks.suite={args.suite}",
                               f"--train.steps={end}", f"--train.checkpoint_every={args.every}",
                               f"--train.keep_checkpoints={args.steps // args.every + 1}",
                               "--resume=auto", *flags, *args.extra)
                print("+", " ".join(cmd), flush=True)
                subprocess.run(cmd, check=True)
                if not os.path.exists(ckpt):
                    sys.exit(f"{ckpt} is missing after training: {run_dir} holds a run with other --steps or "
                             "--every (it resumed from a later checkpoint); use another --runs")
            steps = load_run(os.path.join(run_dir, "trajectories.h5"), with_text=False).steps
            done = steps[steps.step <= end - 1]
            if done.empty or steps.step.min() > 0:
                # A resume that started a new trajectory file (the old one set aside) leaves the
                # first steps out, and their sandbox jobs would be missing from the sum.
                sys.exit(f"{run_dir}/trajectories.h5 lacks the run's first steps (a resume started a new file): "
                         "its sandbox jobs cannot be summed; move the run aside and train it again")
            acc = evaluate(args, ckpt, seed, os.path.join(results, f"eval_{end}.json"), subset)
            with open(point + ".tmp", "w") as f:
                json.dump(dict(step=end, cpu_s=float(done.cpu_s.iloc[-1]),
                               sandbox_jobs=int(done.n_sandbox_jobs.sum()), **settings, **acc), f, indent=1)
            os.replace(point + ".tmp", point)
        with open(point) as f:
            points.append(json.load(f))
        stored = dict(points[-1])
        if "extra" in stored:
            stored["extra"] = [x for x in stored["extra"] if not x.startswith("--model=")]
        check_stored(point, stored, settings)
    if args.full_heldout:
        if not run_usable and not all(os.path.exists(end) for _, (_, end) in full_eval_files(args, seed, results)):
            sys.exit(f"{run_dir} is missing or does not record its settings: its last checkpoint is not evaluated; "
                     "move it aside, or use another --runs")
        full_heldout(args, seed, points, results, run_dir)
    traj = os.path.join(run_dir, "trajectories.h5")
    if run_usable and os.path.exists(traj):  # per-step figures beside the points (the run folder is not committed)
        write_step_summary(traj, os.path.join(results, "steps.csv"))
    return points


def mean_spread(values):
    v = np.asarray(values, dtype=float)
    return f"{v.mean():.3f} ± {(v.max() - v.min()) / 2:.3f}"


def first_reaching(points, target):
    """(cpu_s, sandbox_jobs) at the first trained point (after step 0) whose acc3 reaches target,
    or None. Step 0, the starting policy, costs nothing: a ratio against it means nothing."""
    for p in points[1:]:
        if p["acc3"] >= target:
            return p["cpu_s"], p["sandbox_jobs"]
    return None


def points_stored(folder, steps, every):
    """Whether a run's results folder holds every point of `steps` evaluated every `every`."""
    return all(os.path.exists(os.path.join(folder, f"point_{end}.json")) for end in range(every, steps + 1, every))


def stored_seeds_not_invoked(results, ways, seeds, steps, every):
    """The seeds not in `seeds` whose run of one of `ways` has every point of `steps` and `every`
    stored in `results`: the tables and curves of one invocation cover its own seeds only, and a
    comparison run seed by seed would otherwise draw over its earlier seeds without saying so."""
    found = set()
    for way in ways:
        for folder in glob.glob(os.path.join(results, f"{way}-seed*")):
            tag = os.path.basename(folder)[len(way) + len("-seed"):]
            if tag.isdigit() and int(tag) not in seeds and points_stored(folder, steps, every):
                found.add(int(tag))
    return sorted(found)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--ways", nargs="+", default=["leap", "unpruned", "single"], choices=list(WAYS))
    p.add_argument("--extra-ways", nargs="*", default=[], choices=list(WAYS),
                   help="ways run with the first seed only")
    p.add_argument("--suite", default="tasks/families.jsonl",
                   help="the suite: RL draws its train tasks, the evaluations a held-out subset")
    p.add_argument("--heldout-per-family", type=int, default=4)
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--eval-turns", type=int, default=3)
    p.add_argument("--resample", action="store_true")
    p.add_argument("--full-heldout", action="store_true",
                   help="also evaluate the start and each run's end on every held-out task")
    p.add_argument("--full-eval-seeds", type=int, nargs="+", default=None,
                   help="with --full-heldout: evaluate the start and each end at these sampling seeds and "
                        "average them (default: the run's own seed)")
    add_run_args(p, "benchmarks/results/paper_compare", "runs/paper_compare")
    args = parse_run_args(p)
    if args.every <= 0 or args.steps < args.every or args.steps % args.every:
        p.error("--steps must be a positive multiple of --every (each segment ends in an evaluated checkpoint)")
    if args.full_eval_seeds and not args.full_heldout:
        p.error("--full-eval-seeds needs --full-heldout")
    if args.eval_turns < 3:
        p.error("--eval-turns must be at least 3: the comparison reads Acc@3")
    args.extra = [f"--model={args.model}", *args.extra]
    subset = heldout_subset(args)

    curves = {}
    for seed in args.seeds:  # seed by seed, so an interrupted comparison leaves whole seeds behind
        for way in args.ways + [w for w in args.extra_ways if seed == args.seeds[0]]:
            curves.setdefault(way, []).append(run_way(args, way, seed, subset))

    print(f"\n{args.steps} steps (evaluated every {args.every}), seeds {args.seeds}, "
          f"held-out subset {subset}, dynamic sampling {'on' if args.resample else 'off'}\n")
    print("| way | seeds | held-out Acc@1 | Acc@3 | Acc@3 macro over families | CPU-s | sandbox jobs |")
    print("|---|---|---|---|---|---|---|")
    for way, runs in curves.items():
        last = [r[-1] for r in runs]
        print(f"| {way} | {len(runs)} | {mean_spread([x['acc1'] for x in last])} | "
              f"{mean_spread([x['acc3'] for x in last])} | {mean_spread([x['acc3_macro'] for x in last])} | "
              f"{mean_spread([x['cpu_s'] for x in last])} | {mean_spread([x['sandbox_jobs'] for x in last])} |")
    if args.full_heldout:
        seeds_said = (f"mean of the evaluations at sampling seeds {args.full_eval_seeds}" if args.full_eval_seeds
                      else "evaluated at the run's own seed")
        print(f"\nEvery held-out task of the suite, start -> end ({seeds_said}):\n")
        clean = all("acc3_clean_full" in r[0] and "acc3_clean_full" in r[-1] for runs in curves.values() for r in runs)
        keys = ("acc1", "acc3", "acc3_macro") + (("acc3_clean",) if clean else ())
        print("| way | seeds | Acc@1 | Acc@3 | Acc@3 macro over families |"
              + (" Acc@3, clean tasks (not seen_in_train) | clean gain |" if clean else "") + " Acc@3 gain |")
        print("|---" * (len(keys) + 3 + clean) + "|")
        for way, runs in curves.items():
            cells = [f"{mean_spread([r[0][k + '_full'] for r in runs])} -> "
                     f"{mean_spread([r[-1][k + '_full'] for r in runs])}"
                     for k in keys]
            if clean:
                cells.append(mean_spread([r[-1]["acc3_clean_full"] - r[0]["acc3_clean_full"] for r in runs]))
            gain = mean_spread([r[-1]["acc3_full"] - r[0]["acc3_full"] for r in runs])
            print(f"| {way} | {len(runs)} | {' | '.join(cells)} | {gain} |")
    if "leap" in curves:
        key = "acc3_full" if args.full_heldout else "acc3"
        gain = [r[-1][key] - r[0][key] for r in curves["leap"]]
        where = "every held-out task" if args.full_heldout else "the held-out subset"
        print(f"\nRL gain in held-out Acc@3 over the starting policy (leap, {where}): {mean_spread(gain)} "
              "(target >= 0.05)")
        runs = curves["leap"]
        if args.full_heldout and all("acc3_clean_full" in r[0] and "acc3_clean_full" in r[-1] for r in runs):
            clean_gain = [r[-1]["acc3_clean_full"] - r[0]["acc3_clean_full"] for r in runs]
            print(f"RL gain in held-out Acc@3 over the starting policy (leap, the held-out tasks the suite does not "
                  f"mark seen_in_train): {mean_spread(clean_gain)} (target >= 0.05)")
    if "leap" in curves and "unpruned" in curves:
        # The same steps, seed by seed: what pruning saves whatever the accuracy reached.
        pairs = list(zip(curves["leap"], curves["unpruned"]))
        cpu = [lp[-1]["cpu_s"] / up[-1]["cpu_s"] for lp, up in pairs]
        jobs = [lp[-1]["sandbox_jobs"] / up[-1]["sandbox_jobs"] for lp, up in pairs]
        print(f"at {args.steps} steps, leap / unpruned: CPU-s {mean_spread(cpu)}, sandbox jobs {mean_spread(jobs)}")
        for i, (lp, up) in enumerate(pairs):
            reached = first_reaching(lp, up[-1]["acc3"])
            if up[-1]["acc3"] <= up[0]["acc3"]:
                print(f"seed {args.seeds[i]}: unpruned's final Acc@3 {up[-1]['acc3']:.3f} is no better than the "
                      f"starting policy's {up[0]['acc3']:.3f}: no ratio to report")
            elif reached is None:
                print(f"seed {args.seeds[i]}: leap does not reach unpruned's final Acc@3 {up[-1]['acc3']:.3f}")
            else:
                # Against unpruned's own first point at that accuracy too: its final point may
                # have reached it long before, and only the first arrival is a fair cost.
                own = first_reaching(up, up[-1]["acc3"])
                print(f"seed {args.seeds[i]}: leap reaches unpruned's final Acc@3 {up[-1]['acc3']:.3f} with "
                      f"{up[-1]['cpu_s'] / max(reached[0], 1e-9):.2f}x fewer CPU-s and "
                      f"{up[-1]['sandbox_jobs'] / max(reached[1], 1):.2f}x fewer sandbox jobs than unpruned's "
                      f"final point; unpruned first reached it with {own[0]:.0f} CPU-s and {own[1]} jobs, "
                      f"{own[0] / max(reached[0], 1e-9):.2f}x and {own[1] / max(reached[1], 1):.2f}x leap's")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for c, (way, runs) in enumerate(curves.items()):
        for row, metric in enumerate(("acc1", "acc3")):
            for col, budget in enumerate(("cpu_s", "sandbox_jobs")):
                x = np.mean([[pt[budget] for pt in r] for r in runs], axis=0)
                y = np.array([[pt[metric] for pt in r] for r in runs])
                ax = axes[row][col]
                ax.plot(x, y.mean(axis=0), marker="o", color=f"C{c}", label=f"{way} ({len(runs)} seeds)")
                ax.fill_between(x, y.min(axis=0), y.max(axis=0), color=f"C{c}", alpha=0.2)
                ax.set_xlabel("CPU-seconds of the job" if budget == "cpu_s" else "sandbox jobs")
                ax.set_ylabel(f"held-out {'Acc@1' if metric == 'acc1' else 'Acc@3'}")
    for ax in axes.flat:
        ax.legend(fontsize=8)
    fig.suptitle(f"run seeds {args.seeds}, {args.steps} steps", fontsize=10)
    fig.tight_layout()
    png = os.path.join(args.results, "curves.png")
    fig.savefig(png, dpi=110)
    print(f"\ncurves: {png} (run seeds {args.seeds})")
    others = stored_seeds_not_invoked(args.results, list(curves), args.seeds, args.steps, args.every)
    if others:
        every = sorted(set(args.seeds) | set(others))
        print(f"{args.results} also holds finished runs at seeds {others}, left out of the tables and the curves "
              f"above: --seeds {' '.join(map(str, every))} draws them all (a finished run is not trained again)")


if __name__ == "__main__":
    main()
