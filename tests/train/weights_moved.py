"""Checks that training changed the policy: every tensor of INITIAL/model.safetensors is present in
TRAINED/model.safetensors with its shape, and at least one differs (the maximum change is printed).
Reads safetensors by hand (8-byte header length, JSON header, raw little-endian data).

usage: weights_moved.py INITIAL_DIR TRAINED_DIR
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


a, b = (tensors(d + "/model.safetensors") for d in sys.argv[1:3])
missing = sorted(set(a) ^ set(b))
if missing:
    sys.exit(f"FAIL weights: tensors in only one file: {missing[:5]}")
changes = {k: float(np.abs(a[k] - b[k]).max()) for k in a if a[k].shape == b[k].shape}
if len(changes) != len(a):
    sys.exit("FAIL weights: shapes differ")
moved = [k for k, v in changes.items() if v > 0]
if not moved:
    sys.exit("FAIL weights: training left every parameter as it was")
top = max(changes, key=changes.get)
print(f"ok   weights moved: {len(moved)} of {len(a)} tensors changed, max |change| {changes[top]:.3g} ({top})")
