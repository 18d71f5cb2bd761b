"""Load a LEAP trajectory file (HDF5) into pandas DataFrames.

    from leap_trajectories import load_run
    run = load_run("runs/demo/trajectories.h5")      # works on a running job too (SWMR)
    run.steps      # one row per RL step
    run.samples    # one row per turn-sample; verdict/dcp as names, task as its id,
                   # and prompt/completion/feedback text columns
    run.config     # the resolved config (INI text)

Texts are stored as UTF-8 bytes plus int64 end offsets (variable-length strings are not
SWMR-safe), so this module slices them back into Python strings. /steps is the commit marker:
only samples of steps that have a /steps row are returned, so a reader never sees half a step.
"""
from __future__ import annotations

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


if __name__ == "__main__":
    run = load_run(sys.argv[1])
    print(run.steps.to_string())
    print(run.samples.drop(columns=["prompt", "completion", "feedback"]).to_string())
