"""Checks every number of `leap analyze --format json` against pandas over the same file, read
with h5py through tools/leap_trajectories.py; pass rates are also checked against the trainer's own
/steps pass_turn1 and pass_final, and mean completion tokens against /steps.

usage: check_analyze.py ANALYZE.json RUN.h5 [--last N | --prefix] [--csv STEPS.csv]
  --last N   the JSON was made with --last N: it covers the file's last N steps
  --prefix   the JSON was made while the run was writing: its steps are the first ones of RUN.h5
  --csv F    F is `--format csv` (the steps table) of the same analysis: it must equal the JSON
"""
import argparse
import configparser
import json
import math
import os
import sys

import h5py
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from leap_trajectories import (STEP_SUMMARY_COLUMNS, load_run, max_turns, pass_rates, trajectories,  # noqa: E402
                               write_step_summary)

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("h5")
ap.add_argument("--last", type=int, default=0)
ap.add_argument("--prefix", action="store_true")
ap.add_argument("--csv")
args = ap.parse_args()

got = json.load(open(args.json))
run = load_run(args.h5, with_text=False)
errors = []


def close(a, b):
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and \
               (b is None or (isinstance(b, float) and math.isnan(b)))
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return abs(float(a) - float(b)) <= 1e-9 + 1e-9 * abs(float(b))


def compare(where, got_row, want_row):
    if set(got_row) != set(want_row):
        errors.append(f"{where}: keys {sorted(set(got_row) ^ set(want_row))} differ")
    for k, v in want_row.items():
        if k in got_row and not close(got_row[k], v):
            errors.append(f"{where}.{k}: analyze {got_row[k]!r}, pandas {v!r}")


def nan_to_none(x):
    return None if isinstance(x, float) and math.isnan(x) else x


def ratio(a, b):
    return float(a) / float(b) if b > 0 else None


# Which steps the analysis covers; wall-clock time runs over the whole file.
all_steps = run.steps.copy()
all_steps["wall_s"] = all_steps["time_s"].cumsum()
if args.prefix:
    k = got["run"]["steps_in_file"]
    if not 1 <= k <= len(all_steps):
        errors.append(f"mid-run analysis saw {k} steps; the file has {len(all_steps)}")
    steps = all_steps.iloc[:k]
elif args.last:
    steps = all_steps.iloc[-args.last:]
else:
    steps = all_steps
shown = set(steps["step"])
samples = run.samples[run.samples["step"].isin(shown)]
verdict_names = sorted(h5py.check_enum_dtype(h5py.File(args.h5, "r", libver="latest", swmr=True)["samples"].dtype["verdict"]).items(),
                       key=lambda kv: kv[1])
verdict_names = [name for name, _ in verdict_names]
turns = max_turns(run)
traj = trajectories(run)
traj = traj[traj["step"].isin(shown)]
rates = pass_rates(run)

# The run facts.
want_run = {
    "version": run.version, "git_commit": run.git_commit, "schema_version": "7",
    "swmr_read": "SWMR",
    "steps_in_file": len(steps) if args.prefix else len(all_steps),
    "steps": len(steps),
    "first_step": int(steps["step"].iloc[0]) if len(steps) else None,
    "last_step": int(steps["step"].iloc[-1]) if len(steps) else None,
    "tasks": len(run.task_ids), "turns": turns, "samples": len(samples), "trajectories": len(traj),
    "groups": int(steps["n_groups"].sum()), "easy": int(steps["n_easy"].sum()),
    "hopeless": int(steps["n_hopeless"].sum()), "expanded": int(steps["n_expanded"].sum()),
    "dropped_groups": int(steps["n_dropped_groups"].sum()), "sandbox_jobs": int(steps["n_sandbox_jobs"].sum()),
    "tokens_generated": int(steps["tokens_generated"].sum()),
    "jobs_overlapped": int(steps["n_jobs_overlapped"].sum()),
    "train_sequences": int(steps["train_sequences"].sum()),
    "train_sequences_early": int(steps["train_sequences_early"].sum()),
    "speculative_turns": int(steps["n_speculative"].sum()),
    "speculative_dropped": int(steps["n_speculative_dropped"].sum()),
    "rollout_ahead": int(steps["n_rollout_ahead"].sum()),
    # From /samples, not /steps: each turn-sample's prompt, less what came from another sequence's KV cache.
    "prefill_tokens": int((samples["prompt_tokens"] - samples["kv_reused_tokens"]).sum()),
    "kv_reused_frac": ratio(samples["kv_reused_tokens"].sum(), samples["prompt_tokens"].sum()),
    "time_s": steps["time_s"].sum(), "gen_s": steps["gen_s"].sum(), "sandbox_s": steps["sandbox_s"].sum(),
    "train_s": steps["train_s"].sum(),
}
for part in ("gen", "sandbox", "train"):
    want_run[part + "_frac"] = ratio(want_run[part + "_s"], want_run["time_s"])


def idle_shares(frame):
    """The idle ratios of /steps' time accounting, summed over the rows given."""
    policy = frame["policy_busy_s"].sum() + frame["policy_wait_s"].sum() + frame["policy_idle_s"].sum()
    slots = frame["sandbox_busy_s"].sum() + frame["sandbox_idle_s"].sum()
    return {"policy_wait_frac": ratio(frame["policy_wait_s"].sum(), policy),
            "policy_wait_before_drain_frac": ratio(frame["policy_wait_s"].sum() - frame["policy_drain_s"].sum(), policy),
            "policy_idle_frac": ratio(frame["policy_idle_s"].sum(), policy),
            "sandbox_idle_frac": ratio(frame["sandbox_idle_s"].sum(), slots)}


want_run.update(idle_shares(steps))
cfg = configparser.ConfigParser(interpolation=None, strict=False)
cfg.read_string(run.config)
want_run["pipeline"] = cfg.get("rl", "pipeline", fallback="")
want_run["simulated_exec_ms"] = cfg.get("sandbox", "simulated_exec_ms", fallback="")
got_run = dict(got["run"])
pending = got_run.pop("steps_pending", None)
got_file = got_run.pop("file", "")
if not args.prefix and pending != 0:
    errors.append(f"run.steps_pending {pending} in a finished file")
compare("run", got_run, want_run)
if os.path.realpath(got_file) != os.path.realpath(args.h5):
    errors.append(f"run.file {got_file!r} is not {args.h5!r}")

# Per step.
want_steps = []
for _, st in steps.iterrows():
    s = int(st["step"])
    rows = samples[samples["step"] == s]
    tr = traj[traj["step"] == s]
    w = {"step": s, "wall_s": st["wall_s"], "trajectories": len(tr), "void_trajectories": int(tr["void"].sum())}
    for k in range(1, turns + 1):
        name = "pass_t1" if k == 1 else f"pass_by_t{k}"
        w[name] = nan_to_none(float(rates.loc[s, name]))
    w["pass_final"] = nan_to_none(float(rates.loc[s, "pass_final"]))
    if w["pass_t1"] is not None:  # the trainer's own pass rates (NaN where it had nothing to count)
        if not close(w["pass_t1"], float(st["pass_turn1"])) or not close(w["pass_final"], float(st["pass_final"])):
            errors.append(f"step {s}: pandas pass rates {w['pass_t1']}, {w['pass_final']} differ from /steps "
                          f"{st['pass_turn1']}, {st['pass_final']}")
    for key, col in (("groups", "n_groups"), ("easy", "n_easy"), ("hopeless", "n_hopeless"),
                     ("expanded", "n_expanded"), ("dropped", "n_dropped_groups"), ("sandbox_jobs", "n_sandbox_jobs")):
        w[key] = int(st[col])
    for c in ("easy", "hopeless", "expanded"):
        w[c + "_frac"] = ratio(st["n_" + c], st["n_groups"])
    w["reward_mean"] = tr["reward"].mean()
    w["reward_std"] = tr["reward"].std(ddof=0)
    w["mean_prompt_tokens"] = rows["prompt_tokens"].astype(np.float64).mean()
    w["mean_completion_tokens"] = rows["completion_tokens"].astype(np.float64).mean()
    if not close(w["mean_completion_tokens"], float(st["mean_completion_tokens"])):
        errors.append(f"step {s}: mean completion tokens {w['mean_completion_tokens']} vs /steps "
                      f"{st['mean_completion_tokens']}")
    w["loss"] = st["loss"]
    for c in ("time_s", "gen_s", "sandbox_s", "train_s"):
        w[c] = st[c]
    for part in ("gen", "sandbox", "train"):
        w[part + "_frac"] = ratio(st[part + "_s"], st["time_s"])
    w.update(idle_shares(steps[steps["step"] == s]))
    want_steps.append(w)
if len(got["steps"]) != len(want_steps):
    errors.append(f"{len(got['steps'])} step rows, wanted {len(want_steps)}")
for i, (g, w) in enumerate(zip(got["steps"], want_steps)):
    compare(f"steps[{i}]", g, w)


def verdict_row(frame):
    counts = frame["verdict"].value_counts()
    row = {"samples": len(frame)}
    row.update({name: int(counts.get(name, 0)) for name in verdict_names})
    return row


want_sv = [{"step": int(s), **verdict_row(samples[samples["step"] == s])} for s in steps["step"]]
for i, (g, w) in enumerate(zip(got["step_verdicts"], want_sv)):
    compare(f"step_verdicts[{i}]", g, w)
want_v = [{"scope": "all", **verdict_row(samples)}] + \
         [{"scope": f"turn {k}", **verdict_row(samples[samples["turn"] == k])} for k in range(1, turns + 1)]
if len(got["verdicts"]) != len(want_v) or len(got["step_verdicts"]) != len(want_sv):
    errors.append("verdict tables have the wrong number of rows")
for i, (g, w) in enumerate(zip(got["verdicts"], want_v)):
    compare(f"verdicts[{i}]", g, w)


def length_row(name, values):
    v = values.astype(np.float64).to_numpy()
    row = {"tokens": name, "count": len(v)}
    if len(v) == 0:
        row.update({k: None for k in ("mean", "min", "p10", "p25", "p50", "p75", "p90", "max")})
        return row
    row.update({"mean": v.mean(), "min": v.min(), "max": v.max()})
    for q in (10, 25, 50, 75, 90):
        row[f"p{q}"] = float(np.quantile(v, q / 100))
    return row


want_t = [length_row("prompt", samples["prompt_tokens"]), length_row("completion", samples["completion_tokens"])] + \
         [length_row(f"completion turn {k}", samples[samples["turn"] == k]["completion_tokens"])
          for k in range(1, turns + 1)]
if len(got["tokens"]) != len(want_t):
    errors.append(f"{len(got['tokens'])} token rows, wanted {len(want_t)}")
for i, (g, w) in enumerate(zip(got["tokens"], want_t)):
    compare(f"tokens[{i}]", g, w)

if args.csv:
    csv = pd.read_csv(args.csv)
    if list(csv.columns) != list(got["steps"][0].keys()) or len(csv) != len(got["steps"]):
        errors.append(f"csv columns/rows {list(csv.columns)} x {len(csv)} differ from the JSON steps table")
    else:
        for i, g in enumerate(got["steps"]):
            compare(f"csv[{i}]", {k: nan_to_none(float(v)) for k, v in csv.iloc[i].items()}, g)

# The benchmarks' per-step summary (write_step_summary) against the file's /steps read by h5py
# (a finished file: a live one may hold rows not yet committed).
if not args.prefix:
    summary_csv = os.path.join(os.path.dirname(os.path.abspath(args.json)), "step_summary.csv")
    write_step_summary(args.h5, summary_csv)
    summary = pd.read_csv(summary_csv)
    with h5py.File(args.h5, "r") as f:
        raw = f["steps"][...]
    if list(summary.columns) != STEP_SUMMARY_COLUMNS or len(summary) != len(raw):
        errors.append(f"step summary: columns {list(summary.columns)} x {len(summary)} rows, wanted "
                      f"{STEP_SUMMARY_COLUMNS} x {len(raw)}")
    else:
        for col in STEP_SUMMARY_COLUMNS:
            ok = np.isclose(summary[col].to_numpy(float), raw[col].astype(float), rtol=1e-5, atol=0,
                            equal_nan=True)
            if not ok.all():
                errors.append(f"step summary: column {col} differs from /steps at rows {np.flatnonzero(~ok)[:5]}")

if errors:
    print("\n".join(errors[:40]))
    sys.exit(1)
print(f"ok: {len(want_steps)} steps, {len(samples)} turn-samples, {len(traj)} trajectories, {turns} turns: "
      f"every number matches pandas")
