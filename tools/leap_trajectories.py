"""Load a LEAP trajectory file (HDF5) into pandas DataFrames.

    from leap_trajectories import load_run
    run = load_run("runs/demo/trajectories.h5")      # works on a running job too (SWMR)
    run.steps      # one row per RL step
    run.samples    # one row per turn-sample; verdict/dcp as names, task as its id,
                   # and prompt/completion/feedback text columns
    run.config     # the resolved config (INI text) of the run's first start
    run.attempts   # every start (the first and each resume): first_step, version, git_commit, config
    trajectories(run)  # one row per (step, group, sample): first OK turn, last verdict, reward
    pass_rates(run)    # per step: pass by turn 1, 2, ..., final (as `leap analyze` shows them)

Texts are stored as UTF-8 bytes plus int64 end offsets (variable-length strings are not
SWMR-safe), so this module slices them back into Python strings. /steps is the commit marker:
only committed steps and their samples are returned (the rule of leap's own reader), so a reader
of a running job never sees half a step or a row not yet written. A file of a newer schema than
this module's is an error; an older one loads with a warning, without the newer columns.
"""
from __future__ import annotations

import configparser
import dataclasses
import json
import os
import sys
import warnings

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
    attempts: list


def _attr(f, name):
    v = f.attrs.get(name, b"")
    return v.decode() if isinstance(v, bytes) else str(v)


def _texts(group, n, first=0):
    """Texts first..n-1 of a text group, reading only their bytes (a long run's texts are GBs)."""
    ends = group["offsets"][:n]
    if n <= first:
        return []
    base = int(ends[first - 1]) if first > 0 else 0
    data = group["data"][base:int(ends[-1])]
    if len(data) != int(ends[-1]) - base:
        raise ValueError(f"{group.file.filename}: {group.name}/data holds fewer bytes than its offsets "
                         "name: the file is damaged")
    starts = np.concatenate([[base], ends[first:-1]]) - base
    stops = ends[first:] - base
    return [bytes(data[s:e]).decode("utf-8", errors="replace") for s, e in zip(starts, stops)]


def _enum_names(dtype_field):
    mapping = h5py.check_enum_dtype(dtype_field)
    return {v: k for k, v in mapping.items()} if mapping else {}


SCHEMA_VERSION = 7  # what this module reads in full (src/io/trajectory_rows.h)


def _committed(steps_arr, sample_rows):
    """How many /steps rows are committed steps, and the /samples rows they cover, by the rule of
    leap's own reader (step_row_committed): a row a reader sees before its data was written reads
    as zeros, while every step has at least one group and a larger step number than the one
    before, and its samples are already in /samples."""
    k = rows = 0
    for i, st in enumerate(steps_arr):
        if st["n_groups"] <= 0 or st["n_samples"] < 0 or (i > 0 and st["step"] <= steps_arr[i - 1]["step"]):
            break
        if rows + int(st["n_samples"]) > sample_rows:
            break
        rows += int(st["n_samples"])
        k += 1
    return k, rows


def load_run(path: str, with_text: bool = True, last: int | None = None) -> Run:
    """The committed steps of a run and their samples. `last`: only the last N steps (and their
    samples and texts), as `leap analyze --last N` (0 or None: all). For a long run, `with_text=False` (or a
    small `last`) keeps the prompts and completions, the bulk of the file, out of memory."""
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        version = _attr(f, "schema_version")
        if not version.isdigit() or int(version) > SCHEMA_VERSION:
            raise ValueError(f"{path}: trajectory schema version {version or '(none)'}; this reader reads "
                             f"up to {SCHEMA_VERSION}: use the leap_trajectories.py of the leap that wrote it")
        if int(version) < SCHEMA_VERSION:
            warnings.warn(f"{path}: trajectory schema version {version} (this reader's is {SCHEMA_VERSION}): "
                          "the columns added since are missing (src/io/trajectory_rows.h lists them)")
        for name in ("steps", "samples"):
            f[name].id.refresh()
        steps_arr = f["steps"][...]
        samples_arr = f["samples"][...]
        k, n = _committed(steps_arr, len(samples_arr))
        if last is not None and last < 0:
            raise ValueError(f"last={last}: give a number of steps (0 or None: all of them)")
        first_step = max(0, k - last) if last else 0
        first = int(steps_arr["n_samples"][:first_step].sum())
        steps_arr, samples_arr = steps_arr[first_step:k], samples_arr[first:n]
        # Each sample row belongs to the step whose count covers it, with a turn from 1: a row
        # that does not (zeros a reader saw before the data) means a damaged or misread file.
        want = np.repeat(steps_arr["step"], steps_arr["n_samples"].astype(np.int64))
        if not np.array_equal(want, samples_arr["step"]) or (samples_arr["turn"] < 1).any():
            raise ValueError(f"{path}: /samples rows do not line up with /steps (step numbers or turns): "
                             "the file is damaged")
        steps = pd.DataFrame(steps_arr)
        samples = pd.DataFrame(samples_arr)
        for field in ("verdict", "dcp"):
            names = _enum_names(f["samples"].dtype[field])
            codes = samples_arr[field].astype(np.int64)
            lookup = {int(v): names.get(int(v), str(v)) for v in np.unique(codes)}
            samples[field] = pd.Series(codes).map(lookup).to_numpy(dtype=object)
        ids_group = f["tasks/id"]
        task_ids = _texts(ids_group, len(ids_group["offsets"]))
        bad = [int(i) for i in samples_arr["task"] if not 0 <= i < len(task_ids)]
        if bad:
            raise ValueError(f"{path}: /samples names task index {bad[0]}, but /tasks/id has {len(task_ids)} "
                             "tasks: the file is damaged")
        samples["task_id"] = np.asarray(task_ids, dtype=object)[samples_arr["task"].astype(np.int64)] \
            if len(task_ids) else np.zeros(0, dtype=object)
        if with_text:
            for col in ("prompt", "completion", "feedback"):
                samples[col] = _texts(f["text/" + col], n, first)
        # Files from before the attribute existed: their first start, as the root attributes say.
        attempts = json.loads(_attr(f, "attempts") or "null") or [
            {"first_step": 0, "version": _attr(f, "version"), "git_commit": _attr(f, "git_commit"),
             "config": _attr(f, "config")}]
        return Run(steps, samples, _attr(f, "config"), _attr(f, "version"), _attr(f, "git_commit"), task_ids,
                   attempts)


def trajectories(run: Run) -> pd.DataFrame:
    """One row per trajectory (step, group, sample): task_id, turns, the first turn with an OK
    verdict (NaN if none), the last turn's verdict, void (last turn SANDBOX_ERROR: no outcome the
    policy earned, left out of pass rates as in training) and the sample's reward."""
    s = run.samples.sort_values(["step", "group", "sample", "turn"], kind="stable")
    keys = ["step", "group", "sample"]
    g = s.groupby(keys, sort=True)
    # The earliest turn's row as it is: GroupBy.first() would skip a NaN reward and take a later
    # turn's (leap analyze reads the earliest turn's).
    earliest = s.drop_duplicates(keys, keep="first").set_index(keys)
    out = pd.DataFrame({
        "task_id": earliest["task_id"],
        "turns": g["turn"].max(),
        "first_ok_turn": s[s["verdict"] == "OK"].groupby(keys)["turn"].min(),
        "last_verdict": g["verdict"].last(),
        "reward": earliest["reward"].astype(np.float64),
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


# The /steps columns a benchmark commits beside its results: what each step cost, how its groups
# were classified, and how the update went (the trajectory file itself stays out of git).
STEP_SUMMARY_COLUMNS = ["step", "time_s", "cpu_s", "n_sandbox_jobs", "pass_turn1", "pass_final", "n_easy",
                        "n_hopeless", "n_expanded", "n_resampled", "tokens_generated", "entropy", "grad_norm",
                        "loss", "ratio_max", "lr"]


def write_step_summary(trajectory_path: str, csv_path: str) -> None:
    """Writes STEP_SUMMARY_COLUMNS of a run's committed steps to csv_path, atomically (a column that
    a file of an older schema lacks is left empty)."""
    steps = load_run(trajectory_path, with_text=False).steps
    steps.reindex(columns=STEP_SUMMARY_COLUMNS).to_csv(csv_path + ".tmp", index=False, float_format="%.9g")  # 9 digits: cpu_s of a long cluster run passes 10^6
    os.replace(csv_path + ".tmp", csv_path)


if __name__ == "__main__":
    run = load_run(sys.argv[1])
    print(run.steps.to_string())
    print(run.samples.drop(columns=["prompt", "completion", "feedback"]).to_string())

