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
# The same rows at RL's sampling temperature 0.7: log softmax(s * logits) with s the float32 1/0.7
# the backends take (the recorded, training and reference log-probabilities of a tempered run).
s = torch.tensor([1.0 / 0.7], dtype=torch.float32)
(ld,) = d64(logits)
lp = torch.log_softmax(ld * s.double().item(), -1).gather(1, targets.clamp(min=0).to(dev)[:, None])[:, 0]
lp = torch.where(targets.to(dev) >= 0, lp, torch.zeros_like(lp))
lp.backward(g.to(dev, torch.float64))
for n, t in [("lpt_s", s), ("lpt_out", lp), ("lpt_dlogits", ld.grad)]:
    save(n, t)

# RoPE, rotate-half (HF): x (N, H, D), row n at position pos[n], tables (maxT, D/2) from theta.
N, H, D, maxT = 97, 6, 64, 512
x, dy = randn(N, H, D), randn(N, H, D)
pos = torch.randint(0, maxT, (N,), generator=gen)
inv = 1.0 / (10000.0 ** (torch.arange(0, D // 2, dtype=torch.float64) * 2 / D))
ang = torch.arange(maxT, dtype=torch.float64)[:, None] * inv[None, :]
cos_t, sin_t = ang.cos().float(), ang.sin().float()
(xd,) = d64(x)
c = cos_t.to(dev, torch.float64)[pos.to(dev)][:, None, :]
sn = sin_t.to(dev, torch.float64)[pos.to(dev)][:, None, :]
x1, x2 = xd[..., : D // 2], xd[..., D // 2:]
y = torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], dim=-1)
y.backward(dy.to(dev, torch.float64))
for n, t in [("rope_x", x), ("rope_dy", dy), ("rope_cos", cos_t), ("rope_sin", sin_t),
             ("rope_pos", pos), ("rope_y", y), ("rope_dx", xd.grad)]:
    save(n, t)
shapes.append("rope N=%d H=%d D=%d maxT=%d" % (N, H, D, maxT))

# Embedding: out (N, C) = wte[tokens]; the backward sums repeated tokens' rows into dwte.
N, Vocab, C = 300, 1000, 384
wte, dy = randn(Vocab, C), randn(N, C)
tokens = torch.randint(0, 50, (N,), generator=gen)  # a small range: many repeats
(wd,) = d64(wte)
y = wd[tokens.to(dev)]
y.backward(dy.to(dev, torch.float64))
for n, t in [("emb_wte", wte), ("emb_tokens", tokens), ("emb_dy", dy), ("emb_y", y),
             ("emb_dwte", wd.grad)]:
    save(n, t)
shapes.append("embedding N=%d V=%d C=%d" % (N, Vocab, C))

# AdamW (decoupled weight decay, torch.optim.AdamW's update written out), one step at t = 3
# from non-zero moments, with a gradient scale. The check compares the parameters' change, so
# the parameters are weight-sized (0.02): their fp32 rounding (an ulp of |p|) stays far below
# the lr-sized change, which O(1) parameters would not allow.
n_p = 100003
lr, b1, b2, eps, wdecay, gscale, step = 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.5, 3
p0, m0, g = randn(n_p, scale=0.02), randn(n_p, scale=0.01), randn(n_p)
v0 = randn(n_p, scale=0.01).abs()
pd, md, vd, gd = [t.to(dev, torch.float64) for t in (p0, m0, v0, g)]
gd = gd * gscale
m1 = b1 * md + (1 - b1) * gd
v1 = b2 * vd + (1 - b2) * gd * gd
mhat, vhat = m1 / (1 - b1 ** step), v1 / (1 - b2 ** step)
p1 = pd - lr * (wdecay * pd + mhat / (vhat.sqrt() + eps))
for n, t in [("adamw_p", p0), ("adamw_m", m0), ("adamw_v", v0), ("adamw_g", g),
             ("adamw_p1", p1), ("adamw_m1", m1), ("adamw_v1", v1)]:
    save(n, t)
shapes.append("adamw n=%d lr=%r beta1=%r beta2=%r eps=%r weight_decay=%r grad_scale=%r t=%d"
              % (n_p, lr, b1, b2, eps, wdecay, gscale, step))

# Sum of squares (global-norm clipping), in float64 from float32 values.
n_s = 1000003
xs = randn(n_s, scale=0.01)
ss = (xs.to(dev, torch.float64) ** 2).sum()
save("sumsq_x", xs)
shapes.append("sum_squares n=%d want=%.17g" % (n_s, ss.item()))

# Decode: kv_cache_write puts each row's K/V at position len-1 of its slot, then
# attention_decode reads positions [0, len) of that slot. Caches (slots, maxT, Hkv, D).
slots, maxT, H, Hkv, D = 5, 40, 8, 2, 64
n_r = 4
slot = torch.tensor([3, 0, 4, 1])
length = torch.tensor([1, 17, 40, 33])
kc, vc = randn(slots, maxT, Hkv, D), randn(slots, maxT, Hkv, D)
q, k_new, v_new = randn(n_r, H, D), randn(n_r, Hkv, D), randn(n_r, Hkv, D)
kc1, vc1 = kc.clone(), vc.clone()
kc1[slot, length - 1] = k_new
vc1[slot, length - 1] = v_new
outs = []
for r in range(n_r):
    kk = kc1[slot[r], : length[r]].to(dev, torch.float64).repeat_interleave(H // Hkv, dim=1)
    vv = vc1[slot[r], : length[r]].to(dev, torch.float64).repeat_interleave(H // Hkv, dim=1)
    qq = q[r].to(dev, torch.float64)                              # (H, D)
    sc = torch.einsum("hd,thd->ht", qq, kk) / math.sqrt(D)        # (H, len)
    outs.append(torch.einsum("ht,thd->hd", torch.softmax(sc, -1), vv))
for n, t in [("dec_kc", kc), ("dec_vc", vc), ("dec_q", q), ("dec_k", k_new), ("dec_v", v_new),
             ("dec_slot", slot), ("dec_len", length), ("dec_kc1", kc1), ("dec_vc1", vc1),
             ("dec_out", torch.stack(outs))]:
    save(n, t)
shapes.append("decode slots=%d maxT=%d H=%d Hkv=%d D=%d n=%d" % (slots, maxT, H, Hkv, D, n_r))

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
with open(os.path.join(out, "shapes.txt"), "w") as f:
    f.write("\n".join(shapes) + "\n")
print("wrote %d tensors to %s (reference on %s, torch %s)" % (len(manifest), out, dev,
                                                               torch.__version__))
