"""Summary of benchmarks/pipeline_compare.sh's runs: OUT_DIR MS SEED... (see that script)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

out, ms, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]


def steps(setting, pipeline, seed):
    """The committed /steps rows (a killed run's unwritten last row is not one), as a DataFrame."""
    return load_run(f"{out}/{setting}-{pipeline}-{seed}/trajectories.h5", with_text=False).steps


def wait_share(b):
    """The policy ranks' wait on the sandbox outside the end-of-step drain, of their busy + wait
    (stricter than `leap analyze`'s policy_wait_before_drain_frac, which divides by busy + wait +
    idle: the idle time, no work while others generate, is not time they could have waited less)."""
    return (b["policy_wait_s"] - b["policy_drain_s"]).sum() / (b["policy_busy_s"] + b["policy_wait_s"]).sum()


def spread(xs):
    return f"{np.mean(xs):.3f} (min {np.min(xs):.3f}, max {np.max(xs):.3f})"


for setting in [x for x in ("plain", "simulated") if os.path.exists(f"{out}/{x}-sync-{seeds[0]}")]:
    label = "plain demo" if setting == "plain" else f"sandbox.simulated_exec_ms = {ms} (BENCHMARK latency)"
    print(f"== {label}")
    ratios, turn_ratios, shares, ideals, waits = [], [], [], [], []
    # The extra arms present (pipeline_compare.sh: LEAP_BENCH_NOSPEC, LEAP_BENCH_AHEAD).
    extras = {"nospec": "stream, rl.speculative_turns = false", "ahead": "stream, rl.rollout_ahead = true"}
    extras = {k: v for k, v in extras.items() if os.path.exists(f"{out}/{setting}-{k}-{seeds[0]}")}
    x_ratios = {k: [] for k in extras}
    x_waits = {k: [] for k in extras}
    for seed in seeds:
        a, b = steps(setting, "sync", seed), steps(setting, "stream", seed)
        ta, tb = a["time_s"].mean(), b["time_s"].mean()
        ratios.append(tb / ta)
        # The turns alone (the step without training), which is all the pipeline changes.
        turn_ratios.append((b["time_s"] - b["train_s"]).sum() / (a["time_s"] - a["train_s"]).sum())
        shares.append(a["sandbox_s"].sum() / a["time_s"].sum())
        # The ideal: the turns take as long as the longer of generation and verification, the
        # training as long as it does; against the synchronous sum of the three.
        ideal = (np.maximum(a["gen_s"], a["sandbox_s"]) + a["train_s"]).sum() / (a["gen_s"] + a["sandbox_s"] + a["train_s"]).sum()
        ideals.append(ideal)
        busy_wait = b["policy_busy_s"] + b["policy_wait_s"]
        waits.append(wait_share(b))
        print(f"seed {seed}: step s sync {ta:.1f}  stream {tb:.1f}  ratio {tb / ta:.3f} (turns alone "
              f"{turn_ratios[-1]:.3f}; train s sync {a['train_s'].sum():.1f} stream {b['train_s'].sum():.1f}) | sync verifying "
              f"{shares[-1]:.0%} of the step | ideal {ideal:.3f} | stream: policy wait before the drain "
              f"{waits[-1]:.1%}, drain {b['policy_drain_s'].sum() / busy_wait.sum():.1%}, sandbox idle "
              f"{b['sandbox_idle_s'].sum() / (b['sandbox_busy_s'] + b['sandbox_idle_s']).sum():.0%} "
              f"(sync: policy wait before the drain "
              f"{(a['policy_wait_s'] - a['policy_drain_s']).sum() / (a['policy_busy_s'] + a['policy_wait_s']).sum():.1%})")
        same = len(a) == len(b) and all((a[c].to_numpy() == b[c].to_numpy()).all()
                                        for c in ("n_easy", "n_hopeless", "n_expanded", "n_sandbox_jobs"))
        print(f"         pass t1 sync {a['pass_turn1'].mean():.3f} stream {b['pass_turn1'].mean():.3f}; "
              f"final sync {a['pass_final'].mean():.3f} stream {b['pass_final'].mean():.3f}; "
              f"DCP classes and jobs {'identical' if same else 'differ'}")
        print(f"         stream speculative turns {int(b['n_speculative'].sum())}, dropped "
              f"{int(b['n_speculative_dropped'].sum())} ({int(b['speculative_dropped_tokens'].sum())} tokens, "
              f"{b['speculative_dropped_tokens'].sum() / max(1, b['tokens_generated'].sum()):.1%} of those kept)")
        for arm, what in extras.items():
            c = steps(setting, arm, seed)
            x_ratios[arm].append(c["time_s"].mean() / ta)
            x_waits[arm].append(wait_share(c))
            ahead = f", turn-1 samples from the step before {int(c['n_rollout_ahead'].sum())}" if arm == "ahead" else ""
            print(f"         {arm} ({what}): step s {c['time_s'].mean():.1f}, ratio {x_ratios[arm][-1]:.3f}, policy wait "
                  f"before the drain {x_waits[arm][-1]:.1%}; pass t1 {c['pass_turn1'].mean():.3f} final "
                  f"{c['pass_final'].mean():.3f}{ahead}")
    print(f"stream/sync step time over seeds: {spread(ratios)}; the turns alone: {spread(turn_ratios)}")
    print(f"sync verification share: {spread(shares)}; ideal ratio: {spread(ideals)}")
    print(f"stream policy wait before the drain: {spread(waits)}")
    for arm in extras:
        print(f"{arm}/sync step time over seeds: {spread(x_ratios[arm])}; its policy wait before the drain: "
              f"{spread(x_waits[arm])}")
