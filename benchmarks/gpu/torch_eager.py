#!/usr/bin/env python3
"""PyTorch eager baselines for benchmarks/gpu_check.sh, on the same ~124M model and shapes as
`leap_gpu_check train` and `decode` (cuda/check/bench_model.h): a Llama decoder with C=768, L=12,
H=12, D=64, SwiGLU I=2048, V=50304, tied embeddings.

- train: fp32 master weights with bf16 autocast (what the CUDA backend does: bf16 GEMMs, fp32
  weights and AdamW), forward, log-probabilities of the targets, backward, global-norm clipping,
  torch.optim.AdamW; B=8, T=1024; median ms per step after a warm-up.
- decode: bf16 weights, a preallocated KV cache, batch 64 after a 128-token prompt, logits
  copied to the host every step as a sampler needs; ms per step over 128 steps.
Prints one JSON object; timings use torch.cuda.synchronize around host clocks.
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

V, C, L, H, D, I = 50304, 768, 12, 12, 64, 2048
dev = "cuda"


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.Parameter(torch.ones(C))
        self.ln2 = torch.nn.Parameter(torch.ones(C))
        self.qkv = torch.nn.Linear(C, 3 * H * D, bias=False)
        self.o = torch.nn.Linear(H * D, C, bias=False)
        self.gate_up = torch.nn.Linear(C, 2 * I, bias=False)
        self.down = torch.nn.Linear(I, C, bias=False)


def rms(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w.to(x.dtype)


def rope_tables(T):
    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, device=dev).float() / D))
    ang = torch.arange(T, device=dev).float()[:, None] * inv[None]
    return ang.cos(), ang.sin()


def rope(x, cos, sin):  # x (B, H, T, D), rotate-half
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(V, C)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.lnf = torch.nn.Parameter(torch.ones(C))
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, tokens):
        B, T = tokens.shape
        cos, sin = rope_tables(T)
        x = self.wte(tokens)
        for b in self.blocks:
            h = rms(x, b.ln1)
            q, k, v = b.qkv(h).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True)
            x = x + b.o(y.transpose(1, 2).reshape(B, T, H * D))
            g, u = b.gate_up(rms(x, b.ln2)).chunk(2, dim=-1)
            x = x + b.down(F.silu(g) * u)
        return F.linear(rms(x, self.lnf), self.wte.weight)


def bench_train(B=8, T=1024, steps=5):
    torch.manual_seed(0)
    model = Model().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    tokens = torch.randint(0, V, (B, T + 1), device=dev)  # T positions are trained
    P = sum(p.numel() for p in model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        lp = torch.log_softmax(logits.float(), -1).gather(-1, tokens[:, 1:, None])
        (-lp.mean()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    torch.cuda.synchronize()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    med = ms[len(ms) // 2]
    flops_tok = 6 * P + 12 * L * C * T
    tflops = flops_tok * B * T / (med * 1e-3) / 1e12
    del model, opt
    torch.cuda.empty_cache()
    return {"params": P, "batch": B, "seq": T, "step_ms": med, "tokens_per_s": B * T / (med * 1e-3),
            "model_tflops": tflops, "mfu": tflops / 989.0}


@torch.no_grad()
def bench_decode(B=64, prompt=128, steps=128):
    torch.manual_seed(0)
    model = Model().to(dev).to(torch.bfloat16)
    maxT = prompt + steps + 2
    kc = torch.zeros(L, B, H, maxT, D, device=dev, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    cos, sin = rope_tables(maxT)

    def run(tokens, start):  # tokens (B, T) at positions start..start+T-1
        Bn, T = tokens.shape
        c, s = cos[start:start + T], sin[start:start + T]
        x = model.wte(tokens)
        for li, b in enumerate(model.blocks):
            h = rms(x, b.ln1)
            q, k, v = b.qkv(h).view(Bn, T, 3, H, D).permute(2, 0, 3, 1, 4)
            q, k = rope(q, c, s), rope(k, c, s)
            kc[li, :, :, start:start + T] = k
            vc[li, :, :, start:start + T] = v
            y = F.scaled_dot_product_attention(q, kc[li, :, :, :start + T], vc[li, :, :, :start + T],
                                               is_causal=(T > 1))
            x = x + b.o(y.transpose(1, 2).reshape(Bn, T, H * D))
            g, u = b.gate_up(rms(x, b.ln2)).chunk(2, dim=-1)
            x = x + b.down(F.silu(g) * u)
        return F.linear(rms(x[:, -1], model.lnf), model.wte.weight).float().cpu()

    run(torch.randint(0, V, (B, prompt), device=dev), 0)
    pos = prompt
    run(torch.randint(0, V, (B, 1), device=dev), pos)  # warm-up
    pos += 1
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        run(torch.randint(0, V, (B, 1), device=dev), pos)
        pos += 1
    torch.cuda.synchronize()
    step_ms = (time.perf_counter() - t0) * 1e3 / steps
    return {"batch": B, "prompt": prompt, "steps": steps, "step_ms": step_ms,
            "tokens_per_s": B / (step_ms * 1e-3)}


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch", file=sys.stderr)
        sys.exit(3)
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    out["train"] = bench_train()
    print("torch eager train: %.1f ms/step, MFU %.1f%%" % (out["train"]["step_ms"], 100 * out["train"]["mfu"]),
          file=sys.stderr)
    out["decode"] = bench_decode()
    print("torch eager decode: %.3f ms/step" % out["decode"]["step_ms"], file=sys.stderr)
    print(json.dumps(out))
