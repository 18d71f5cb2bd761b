"""Compares two run folders: the same steps, samples (verdicts, tokens, texts) and final
parameters. Used to check that a resumed run equals an uninterrupted one.

usage: compare_runs.py RUN_A RUN_B
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from leap_trajectories import load_run  # noqa: E402

a, b = (load_run(os.path.join(d, "trajectories.h5")) for d in sys.argv[1:3])
errors = []
if list(a.steps["step"]) != list(b.steps["step"]):
    errors.append(f"steps {list(a.steps['step'])} vs {list(b.steps['step'])}")
cols = ["step", "task_id", "group", "sample", "turn", "verdict", "dcp", "reward", "advantage", "completion_tokens",
        "completion", "feedback"]
if len(a.samples) != len(b.samples) or not a.samples[cols].equals(b.samples[cols]):
    errors.append(f"samples differ ({len(a.samples)} vs {len(b.samples)} rows)")
for col in ("loss", "pass_turn1", "pass_final", "n_sandbox_jobs", "n_expanded"):
    if list(a.steps[col]) != list(b.steps[col]):
        errors.append(f"steps.{col}: {list(a.steps[col])} vs {list(b.steps[col])}")
last = "step_%06d" % a.steps["step"].iloc[-1]
pa, pb = (open(os.path.join(d, "checkpoints", last, "model.safetensors"), "rb").read() for d in sys.argv[1:3])
if pa != pb:
    errors.append("final parameters differ")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"identical: {len(a.steps)} steps, {len(a.samples)} samples, final parameters")
