#!/usr/bin/env python3
"""Inputs and PyTorch reference outputs for `leap_gpu_check ops` (the CUDA backend's op parity).

usage: op_reference.py OUT_DIR

Each case is computed by PyTorch in float64 on this machine's GPU (CPU if none) from float32
inputs, with autograd for the backward products; the upstream gradient of every output is a
fixed random tensor. Tensors are raw little-endian files, OUT_DIR/<name>.bin (float32, or int32
for token ids), listed in OUT_DIR/manifest.txt as "<name> <f32|i32> <count>"; the shapes of each
case are in OUT_DIR/shapes.txt as "<case> <key>=<value> ...". Backward references are the pure
gradients: the check program starts its gradient buffers at zero, so accumulation is the same.
"""
import math
import os
import sys

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
dev = "cuda" if torch.cuda.is_available() else "cpu"
gen = torch.Generator(device="cpu").manual_seed(1234)
manifest, shapes = [], []


def randn(*shape, scale=1.0):
    return (torch.randn(*shape, generator=gen) * scale).float()


def save(name, t):
    t = t.detach().cpu().contiguous()
    kind = "i32" if t.dtype in (torch.int32, torch.int64) else "f32"
    t = t.to(torch.int32 if kind == "i32" else torch.float32)
    t.numpy().tofile(os.path.join(out, name + ".bin"))
    manifest.append("%s %s %d" % (name, kind, t.numel()))


def d64(*ts):
    return [t.to(dev, torch.float64).requires_grad_(True) for t in ts]


# matmul: out (N, OC) = x (N, IC) @ w^T + b
N, IC, OC = 257, 384, 320
x, w, b, dy = randn(N, IC), randn(OC, IC, scale=0.05), randn(OC), randn(N, OC)
xd, wd, bd = d64(x, w, b)
y = xd @ wd.T + bd
y.backward(dy.to(dev, torch.float64))
for n, t in [("mm_x", x), ("mm_w", w), ("mm_b", b), ("mm_dy", dy), ("mm_y", y), ("mm_dx", xd.grad),
             ("mm_dw", wd.grad), ("mm_db", bd.grad)]:
    save(n, t)
shapes.append("matmul N=%d IC=%d OC=%d" % (N, IC, OC))

# RMSNorm (HF Llama)
N, C, eps = 129, 640, 1e-6
x, w, dy = randn(N, C), 1 + randn(C, scale=0.1), randn(N, C)
xd, wd = d64(x, w)
y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * wd
y.backward(dy.to(dev, torch.float64))
for n, t in [("rms_x", x), ("rms_w", w), ("rms_dy", dy), ("rms_y", y), ("rms_dx", xd.grad),
             ("rms_dw", wd.grad)]:
    save(n, t)
shapes.append("rmsnorm N=%d C=%d eps=%g" % (N, C, eps))

# SwiGLU: out = silu(gate) * up, inp = [gate | up]
N, I = 131, 512
x, dy = randn(N, 2 * I), randn(N, I)
(xd,) = d64(x)
y = torch.nn.functional.silu(xd[:, :I]) * xd[:, I:]
y.backward(dy.to(dev, torch.float64))
for n, t in [("swiglu_x", x), ("swiglu_dy", dy), ("swiglu_y", y), ("swiglu_dx", xd.grad)]:
    save(n, t)
shapes.append("swiglu N=%d I=%d" % (N, I))

# Causal GQA attention, q (B, T, H, D), k/v (B, T, Hkv, D)
B, T, H, Hkv, D = 2, 300, 8, 2, 64
q, k, v, dy = randn(B, T, H, D), randn(B, T, Hkv, D), randn(B, T, Hkv, D), randn(B, T, H, D)
qd, kd, vd = d64(q, k, v)
rep = H // Hkv
kk = kd.repeat_interleave(rep, dim=2).transpose(1, 2)
vv = vd.repeat_interleave(rep, dim=2).transpose(1, 2)
s = (qd.transpose(1, 2) @ kk.transpose(-1, -2)) / math.sqrt(D)
mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=dev), 1)
p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
y = (p @ vv).transpose(1, 2)
y.backward(dy.to(dev, torch.float64))
for n, t in [("att_q", q), ("att_k", k), ("att_v", v), ("att_dy", dy), ("att_y", y),
             ("att_dq", qd.grad), ("att_dk", kd.grad), ("att_dv", vd.grad)]:
    save(n, t)
shapes.append("attention B=%d T=%d H=%d Hkv=%d D=%d" % (B, T, H, Hkv, D))

# Log-probabilities of targets (-1: ignored row) and their backward.
N, V = 67, 50304
logits, g = randn(N, V, scale=3.0), randn(N)
targets = torch.randint(0, V, (N,), generator=gen)
targets[5] = -1
(ld,) = d64(logits)
lp = torch.log_softmax(ld, -1).gather(1, targets.clamp(min=0).to(dev)[:, None])[:, 0]
lp = torch.where(targets.to(dev) >= 0, lp, torch.zeros_like(lp))
lp.backward(g.to(dev, torch.float64))
for n, t in [("lp_logits", logits), ("lp_targets", targets), ("lp_g", g), ("lp_out", lp),
             ("lp_dlogits", ld.grad)]:
    save(n, t)
shapes.append("logprob N=%d V=%d" % (N, V))

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
with open(os.path.join(out, "shapes.txt"), "w") as f:
    f.write("\n".join(shapes) + "\n")
print("wrote %d tensors to %s (reference on %s, torch %s)" % (len(manifest), out, dev,
                                                               torch.__version__))
