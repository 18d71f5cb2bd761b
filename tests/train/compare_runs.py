"""Compares two run folders: a resumed run against an uninterrupted one. Identical means: the same
/steps and /samples, every column (texts and task ids included) except the wall-clock ones, and
byte-identical safetensors files in the final checkpoint (the bf16 export and every rank's state
file, the same names in both), and the same
state.json but for its measurements (cpu_s, the job's CPU seconds). NaN equals NaN in the same
place.

usage: compare_runs.py RUN_A RUN_B [--near COLUMN=RELTOL ...]

--near lets a /steps column differ by a relative tolerance (e.g. grad_norm, which ZeRO sums shard
by shard: the same norm rounded in another order); everything else stays exact.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

# Wall-clock measurements: the only columns that may differ between two runs of the same steps.
TIMING = {"time_s", "gen_s", "sandbox_s", "train_s", "cpu_s", "compile_ms", "exec_ms", "policy_busy_s",
          "policy_wait_s", "policy_drain_s", "policy_idle_s", "sandbox_busy_s", "sandbox_idle_s"}


def compare_frame(name, fa, fb, errors, near=None):
    if list(fa.columns) != list(fb.columns):
        errors.append(f"{name} columns {list(fa.columns)} vs {list(fb.columns)}")
        return 0
    if len(fa) != len(fb):
        errors.append(f"{name}: {len(fa)} vs {len(fb)} rows")
        return 0
    cols = [c for c in fa.columns if c not in TIMING]
    for col in cols:
        a, b = fa[col].reset_index(drop=True), fb[col].reset_index(drop=True)
        tol = (near or {}).get(col)
        if tol is not None:
            bad = [i for i in range(len(a)) if abs(a[i] - b[i]) > tol * max(abs(a[i]), abs(b[i]))]
            if bad:
                errors.append(f"{name}.{col} differs beyond {tol} (relative) in {len(bad)} rows, first row "
                              f"{bad[0]}: {a[bad[0]]!r} vs {b[bad[0]]!r}")
            continue
        if not a.equals(b):
            bad = [i for i in range(len(a)) if not (a[i] == b[i] or (a[i] != a[i] and b[i] != b[i]))]
            show = (lambda v: repr(v)[:80]) if bad else (lambda v: "?")
            first = bad[0] if bad else 0
            errors.append(f"{name}.{col} differs in {len(bad)} rows, first row {bad[:1]}: "
                          f"{show(a[first])} vs {show(b[first])}")
    return len(cols)


a_dir, b_dir = sys.argv[1:3]
near = {}
rest = sys.argv[3:]
while rest:
    if rest[0] != "--near" or len(rest) < 2 or "=" not in rest[1]:
        sys.exit(f"usage: compare_runs.py RUN_A RUN_B [--near COLUMN=RELTOL ...]; got {rest}")
    col, tol = rest[1].split("=", 1)
    near[col] = float(tol)
    rest = rest[2:]
a, b = (load_run(os.path.join(d, "trajectories.h5")) for d in (a_dir, b_dir))
errors = []
n_step_cols = compare_frame("steps", a.steps, b.steps, errors, near)
n_sample_cols = compare_frame("samples", a.samples, b.samples, errors)
last = "step_%06d" % a.steps["step"].iloc[-1]
files = [sorted(f for f in os.listdir(os.path.join(d, "checkpoints", last)) if f.endswith(".safetensors"))
         for d in (a_dir, b_dir)]
if files[0] != files[1] or not files[0]:
    errors.append(f"{last}: other safetensors files: {files[0]} vs {files[1]}")
for f in files[0] if files[0] == files[1] else []:
    pa, pb = (open(os.path.join(d, "checkpoints", last, f), "rb").read() for d in (a_dir, b_dir))
    if pa != pb:
        errors.append(f"{last}/{f} differs")
sa, sb = ({k: v for k, v in json.load(open(os.path.join(d, "checkpoints", last, "state.json"))).items()
           if k not in TIMING} for d in (a_dir, b_dir))
if sa != sb:
    errors.append(f"{last}/state.json differs: {sa} vs {sb}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"identical: {len(a.steps)} steps x {n_step_cols} columns, {len(a.samples)} samples x {n_sample_cols} columns "
      f"(all but {sorted(TIMING)}{'; within tolerance: ' + str(near) if near else ''}); {last}: model, optimizer and state")
