"""Checks that training changed the policy: every tensor of INITIAL's weights is present in TRAINED's
with its shape, and at least one differs (the maximum change is printed).
With --close TOL it checks the opposite: the two differ by at most TOL in relative L2 error over all
tensors (||a - b|| / ||a||), for runs that must agree up to rounding order.
A model folder's weights are its model.safetensors (or the shards its index names). A run
checkpoint's are its exact fp32 master weights: the master@OFFSET ranges of its
optimizer-rank*-of-*.safetensors files, cut into tensors in the order the bf16 export stores them
(the flat parameter buffer's order), since the export's rounding would hide small updates.
Reads safetensors by hand (8-byte header length, JSON header, raw little-endian data).

usage: weights_moved.py INITIAL_DIR TRAINED_DIR
       weights_moved.py --close TOL RUN_A_DIR RUN_B_DIR
"""
import glob
import json
import os
import struct
import sys

import numpy as np


def read_file(path):
    """name -> (header entry, float64 array), in the file's data order."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        lo, hi = t["data_offsets"]
        if t["dtype"] == "BF16":
            bits = np.frombuffer(data[lo:hi], dtype=np.uint16).astype(np.uint32) << 16
            values = bits.view(np.float32)
        else:
            values = np.frombuffer(data[lo:hi], dtype={"F32": np.float32, "F16": np.float16}[t["dtype"]])
        out[name] = (t, values.astype(np.float64).reshape(t["shape"]))
    return out


def model_files(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        return [os.path.join(d, f) for f in sorted(set(json.load(open(index))["weight_map"].values()))]
    return [os.path.join(d, "model.safetensors")]


def tensors(d):
    named = {}
    for path in model_files(d):
        named.update({k: v for k, (_, v) in read_file(path).items()})
    ranks = sorted(glob.glob(os.path.join(d, "optimizer-rank*-of-*.safetensors")))
    if not ranks:
        return named
    pieces = []
    for path in ranks:
        pieces += [(int(k.split("@")[1]), v) for k, (_, v) in read_file(path).items() if k.startswith("master@")]
    pieces.sort(key=lambda p: p[0])
    flat = np.concatenate([v for _, v in pieces])
    out, at = {}, 0
    for name, v in named.items():
        out[name] = flat[at:at + v.size].reshape(v.shape)
        at += v.size
    if at != flat.size:
        sys.exit(f"FAIL weights: {d}'s master weights hold {flat.size} floats, its export {at}")
    return out


close = sys.argv[1] == "--close"
dirs = sys.argv[3:5] if close else sys.argv[1:3]
a, b = (tensors(d) for d in dirs)
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
