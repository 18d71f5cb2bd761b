"""Load a LEAP trajectory file (HDF5) into pandas DataFrames.

    from leap_trajectories import load_run
    run = load_run("runs/demo/trajectories.h5")      # works on a running job too (SWMR)
    run.steps      # one row per RL step
    run.samples    # one row per turn-sample; verdict/dcp as names, task as its id,
                   # and prompt/completion/feedback text columns
    run.config     # the resolved config (INI text)
    trajectories(run)  # one row per (step, group, sample): first OK turn, last verdict, reward
    pass_rates(run)    # per step: pass by turn 1, 2, ..., final (as `leap analyze` shows them)

Texts are stored as UTF-8 bytes plus int64 end offsets (variable-length strings are not
SWMR-safe), so this module slices them back into Python strings. /steps is the commit marker:
only samples of steps that have a /steps row are returned, so a reader never sees half a step.
"""
from __future__ import annotations

import configparser
import dataclasses
import sys

import h5py
import numpy as np
import pandas as pd


@dataclasses.dataclass
class Run:
    steps: pd.DataFrame
    samples: pd.DataFrame
    config: str
    version: str
    git_commit: str
    task_ids: list


def _attr(f, name):
    v = f.attrs.get(name, b"")
    return v.decode() if isinstance(v, bytes) else str(v)


def _texts(group, n):
    data = group["data"][...]
    ends = group["offsets"][:n]
    starts = np.concatenate([[0], ends[:-1]]) if n else np.zeros(0, dtype=np.int64)
    return [bytes(data[s:e]).decode("utf-8", errors="replace") for s, e in zip(starts, ends)]


def _enum_names(dtype_field):
    mapping = h5py.check_enum_dtype(dtype_field)
    return {v: k for k, v in mapping.items()} if mapping else {}


def load_run(path: str, with_text: bool = True) -> Run:
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        for name in ("steps", "samples"):
            f[name].id.refresh()
        steps_arr = f["steps"][...]
        steps = pd.DataFrame(steps_arr)
        last_step = int(steps_arr["step"].max()) if len(steps_arr) else -1
        samples_arr = f["samples"][...]
        n = int(np.searchsorted(samples_arr["step"], last_step, side="right"))
        samples_arr = samples_arr[:n]
        samples = pd.DataFrame(samples_arr)
        for field in ("verdict", "dcp"):
            names = _enum_names(f["samples"].dtype[field])
            samples[field] = [names.get(int(v), str(v)) for v in samples_arr[field]]
        ids_group = f["tasks/id"]
        task_ids = _texts(ids_group, len(ids_group["offsets"]))
        samples["task_id"] = [task_ids[i] if 0 <= i < len(task_ids) else "?" for i in samples_arr["task"]]
        if with_text:
            for col in ("prompt", "completion", "feedback"):
                samples[col] = _texts(f["text/" + col], n)
        return Run(steps, samples, _attr(f, "config"), _attr(f, "version"), _attr(f, "git_commit"), task_ids)


def trajectories(run: Run) -> pd.DataFrame:
    """One row per trajectory (step, group, sample): task_id, turns, the first turn with an OK
    verdict (NaN if none), the last turn's verdict, void (last turn SANDBOX_ERROR: no outcome the
    policy earned, left out of pass rates as in training) and the sample's reward."""
    s = run.samples.sort_values(["step", "group", "sample", "turn"], kind="stable")
    keys = ["step", "group", "sample"]
    g = s.groupby(keys, sort=True)
    out = pd.DataFrame({
        "task_id": g["task_id"].first(),
        "turns": g["turn"].max(),
        "first_ok_turn": s[s["verdict"] == "OK"].groupby(keys)["turn"].min(),
        "last_verdict": g["verdict"].last(),
        "reward": g["reward"].first().astype(np.float64),
    })
    out["void"] = out["last_verdict"] == "SANDBOX_ERROR"
    return out.reset_index()


def max_turns(run: Run) -> int:
    """rl.max_turns of the run's stored config, or the deepest turn in the file if larger."""
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    cfg.read_string(run.config)
    configured = cfg.getint("rl", "max_turns", fallback=0)
    seen = int(run.samples["turn"].max()) if len(run.samples) else 1
    return max(1, configured, seen)


def pass_rates(run: Run) -> pd.DataFrame:
    """Per step: pass_t1, pass_by_t2, ..., pass_final, each the fraction of non-void trajectories
    whose first OK verdict came at or before that turn (as `leap analyze` reports them)."""
    t = trajectories(run)
    t = t[~t["void"]]
    out = pd.DataFrame(index=pd.Index(run.steps["step"], name="step"))
    n = max_turns(run)
    for k in range(1, n + 1):
        name = "pass_t1" if k == 1 else f"pass_by_t{k}"
        out[name] = (t["first_ok_turn"] <= k).groupby(t["step"]).mean()
    out["pass_final"] = out[f"pass_by_t{n}" if n > 1 else "pass_t1"]
    return out


if __name__ == "__main__":
    run = load_run(sys.argv[1])
    print(run.steps.to_string())
    print(run.samples.drop(columns=["prompt", "completion", "feedback"]).to_string())
