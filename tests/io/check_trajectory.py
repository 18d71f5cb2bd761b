"""Reads a trajectory file written by test_trajectory with h5py (as users do) and checks it.

usage: check_trajectory.py [--attempts=STEP:COMMIT,...] FILE N_STEPS SAMPLES_PER_STEP [--swmr-open]
--attempts: the run's starts (first step and git commit of each), as the `attempts` attribute
lists them; by default one start at step 0.
Each step s has SAMPLES_PER_STEP samples whose texts are f"prompt {s}.{i}" etc. (test contract).
Exits non-zero with a message on any mismatch.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

attempts_arg = [a for a in sys.argv[1:] if a.startswith("--attempts=")]
args = [a for a in sys.argv[1:] if not a.startswith("--attempts=")]
path, n_steps, per_step = args[0], int(args[1]), int(args[2])
run = load_run(path)
errors = []
want_attempts = attempts_arg[0].split("=", 1)[1].split(",") if attempts_arg else ["0:abc123"]
got_attempts = [f"{a['first_step']}:{a['git_commit']}" for a in run.attempts]
if got_attempts != want_attempts:
    errors.append(f"attempts {got_attempts}, wanted {want_attempts}")
if len(run.steps) != n_steps:
    errors.append(f"steps: {len(run.steps)} rows, wanted {n_steps}")
if list(run.steps["step"]) != list(range(n_steps)):
    errors.append(f"step column {list(run.steps['step'])}")
if len(run.samples) != n_steps * per_step:
    errors.append(f"samples: {len(run.samples)} rows, wanted {n_steps * per_step}")
for k, row in run.samples.reset_index(drop=True).iterrows():
    s, i = divmod(k, per_step)
    want = {"step": s, "sample": i, "prompt": f"prompt {s}.{i}", "completion": f"completion {s}.{i} \u00e9",
            "feedback": "" if i % 2 else f"feedback {s}.{i}",
            "verdict": "OK" if i == 0 else "WRONG_ANSWER", "dcp": "expanded" if s % 2 else "easy",
            "task_id": f"L1/task{i % 3}"}
    for key, value in want.items():
        if row[key] != value:
            errors.append(f"row {k} {key}: {row[key]!r} != {value!r}")
if "[rl]" not in run.config:
    errors.append("config attribute missing [rl]")
if run.steps["pass_final"].tolist() != [0.5 + s for s in range(n_steps)]:
    errors.append(f"pass_final {run.steps['pass_final'].tolist()}")
# The last step alone, as `leap analyze --last 1` reads it: its rows and texts only.
if n_steps:
    tail = load_run(path, last=1)
    if list(tail.steps["step"]) != [n_steps - 1] or len(tail.samples) != per_step or \
            tail.samples["prompt"].iloc[0] != f"prompt {n_steps - 1}.0":
        errors.append(f"last=1: steps {list(tail.steps['step'])}, {len(tail.samples)} samples")
# A sample row that does not line up with its step (here a turn of 0, as zeros a reader saw
# before the data would read) is a damaged file, not a row of turn 0.
if n_steps and "--swmr-open" not in sys.argv:
    import shutil
    import tempfile
    import h5py
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "damaged.h5")
        shutil.copy(path, copy)
        try:  # a copy of a file still open for SWMR writing keeps its flags: checked once closed
            f = h5py.File(copy, "r+")
        except OSError:
            f = None
        if f is not None:
            with f:
                row = f["samples"][0]
                row["turn"] = 0
                f["samples"][0] = row
            try:
                load_run(copy)
                errors.append("a sample row of turn 0 loaded without an error")
            except ValueError as e:
                if "do not line up" not in str(e):
                    errors.append(f"damaged file: {e}")
            print("ok: a sample row out of line with its step is refused")
if errors:
    print("\n".join(errors[:20]))
    sys.exit(1)
print(f"ok: {n_steps} steps, {len(run.samples)} samples")
