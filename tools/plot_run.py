"""Plots a LEAP run's trajectory file as PNGs (works on a running job too: HDF5 SWMR).

usage: python3 tools/plot_run.py RUN.h5|RUN_DIR --out DIR

writes into DIR:
  pass_rate_vs_step.png   pass rate by turn 1, 2, ..., final, per RL step
  pass_rate_vs_time.png   the same against the run's training time (running sum of step times)
  dcp_fractions.png       DCP classes per step: fraction of groups easy / hopeless / expanded
  verdict_mix.png         verdicts per step, as fractions of the step's turn-samples
  token_lengths.png       completion-token lengths per turn, and prompt lengths

The numbers are the ones `leap analyze` prints (pass rates from leap_trajectories.pass_rates).
"""
from __future__ import annotations

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from leap_trajectories import load_run, pass_rates  # noqa: E402

DCP_COLORS = {"easy": "tab:green", "hopeless": "tab:red", "expanded": "tab:blue"}


def pass_columns(rates):
    return [c for c in rates.columns if c != "pass_final"] + ["pass_final"]


def label(col):
    return {"pass_t1": "turn 1", "pass_final": "final"}.get(col, col.replace("pass_by_t", "by turn "))


def step_axis(ax):
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_pass(rates, x, xlabel, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for col in pass_columns(rates):
        style = {"linewidth": 2.5, "color": "black"} if col == "pass_final" else {}
        ax.plot(x, rates[col].to_numpy(), marker="o", markersize=3, label=label(col), **style)
    if xlabel == "step":
        step_axis(ax)
    else:
        ax.set_xlabel(xlabel)
    ax.set_ylabel("pass rate (non-void trajectories)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_dcp(steps, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = np.zeros(len(steps))
    groups = steps["n_groups"].to_numpy().astype(float)
    groups[groups == 0] = np.nan
    for cls, color in DCP_COLORS.items():
        frac = np.nan_to_num(steps["n_" + cls].to_numpy() / groups)
        ax.bar(steps["step"], frac, bottom=bottom, color=color, label=cls)
        bottom += frac
    step_axis(ax)
    ax.set_ylabel("fraction of groups")
    ax.set_ylim(0, 1.02)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_verdicts(samples, steps, path):
    counts = samples.groupby(["step", "verdict"]).size().unstack(fill_value=0).reindex(steps["step"], fill_value=0)
    frac = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0)
    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = np.zeros(len(frac))
    colors = plt.get_cmap("tab10")
    for i, verdict in enumerate(frac.columns):
        ax.bar(frac.index, frac[verdict].to_numpy(), bottom=bottom, color=colors(i % 10), label=verdict)
        bottom += frac[verdict].to_numpy()
    step_axis(ax)
    ax.set_ylabel("fraction of turn-samples")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_tokens(samples, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    # A run whose every prompt stopped before turn 1 has steps but no samples.
    top = max(1, int(samples["completion_tokens"].max())) if len(samples) else 1
    bins = np.linspace(0, top + 1, 31)
    for turn, rows in samples.groupby("turn"):
        left.hist(rows["completion_tokens"], bins=bins, alpha=0.5, label=f"turn {turn} ({len(rows)})")
    left.set_xlabel("completion tokens")
    left.set_ylabel("turn-samples")
    left.legend()
    right.hist(samples["prompt_tokens"], bins=30, color="tab:gray")
    right.set_xlabel("prompt tokens")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="the run's trajectories.h5, or its run folder")
    ap.add_argument("--out", required=True, help="folder for the PNGs (created if missing)")
    args = ap.parse_args(argv)
    path = os.path.join(args.run, "trajectories.h5") if os.path.isdir(args.run) else args.run
    if not os.path.exists(path):
        print(f"plot_run.py: error: '{path}' does not exist: pass the trajectories.h5 of a run", file=sys.stderr)
        return 2
    run = load_run(path, with_text=False)
    if len(run.steps) == 0:
        print(f"plot_run.py: '{path}' has no steps yet: nothing to plot", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    rates = pass_rates(run)
    wall_min = run.steps["time_s"].cumsum().to_numpy() / 60.0
    written = {
        "pass_rate_vs_step.png": lambda p: plot_pass(rates, rates.index.to_numpy(), "step", p),
        "pass_rate_vs_time.png": lambda p: plot_pass(rates, wall_min, "training time (min)", p),
        "dcp_fractions.png": lambda p: plot_dcp(run.steps, p),
        "verdict_mix.png": lambda p: plot_verdicts(run.samples, run.steps, p),
        "token_lengths.png": lambda p: plot_tokens(run.samples, p),
    }
    for name, plot in written.items():
        # Written beside, then renamed: a reader never sees half a PNG.
        final = os.path.join(args.out, name)
        tmp = final + ".tmp.png"
        plot(tmp)
        os.replace(tmp, final)
        print(final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
