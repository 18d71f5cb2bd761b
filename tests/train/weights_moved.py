"""Checks that training changed the policy: every tensor of INITIAL/model.safetensors is present in
TRAINED/model.safetensors with its shape, and at least one differs (the maximum change is printed).
With --close TOL it checks the opposite: the two differ by at most TOL in relative L2 error over all
tensors (||a - b|| / ||a||), for runs that must agree up to rounding order.
Reads safetensors by hand (8-byte header length, JSON header, raw little-endian data).

usage: weights_moved.py INITIAL_DIR TRAINED_DIR
       weights_moved.py --close TOL RUN_A_DIR RUN_B_DIR
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def tensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        out[name] = np.frombuffer(data[lo:hi], dtype=DTYPES[t["dtype"]]).astype(np.float64).reshape(t["shape"])
    return out


close = sys.argv[1] == "--close"
dirs = sys.argv[3:5] if close else sys.argv[1:3]
a, b = (tensors(d + "/model.safetensors") for d in dirs)
missing = sorted(set(a) ^ set(b))
if missing:
    sys.exit(f"FAIL weights: tensors in only one file: {missing[:5]}")
changes = {k: float(np.abs(a[k] - b[k]).max()) for k in a if a[k].shape == b[k].shape}
if len(changes) != len(a):
    sys.exit("FAIL weights: shapes differ")
if close:
    tol = float(sys.argv[2])
    err = np.sqrt(sum(float(((a[k] - b[k]) ** 2).sum()) for k in a) / sum(float((a[k] ** 2).sum()) for k in a))
    if not err <= tol:
        sys.exit(f"FAIL weights: relative error {err:.3g} between {dirs[0]} and {dirs[1]}, above {tol:g}")
    print(f"ok   weights agree: relative error {err:.3g} (at most {tol:g})")
    sys.exit(0)
moved = [k for k, v in changes.items() if v > 0]
if not moved:
    sys.exit("FAIL weights: training left every parameter as it was")
top = max(changes, key=changes.get)
print(f"ok   weights moved: {len(moved)} of {len(a)} tensors changed, max |change| {changes[top]:.3g} ({top})")
