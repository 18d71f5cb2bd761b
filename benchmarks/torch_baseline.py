#!/usr/bin/python3
"""PyTorch baseline for bench_model: the same Llama-style policy written idiomatically
(nn.Linear, matmul-softmax causal attention, a preallocated KV cache for sampling), the same
shapes and the same thread count. Prints one JSON object with the measured rates.

  /usr/bin/python3 benchmarks/torch_baseline.py --threads 2 [--what train,sample] [--iters N]

Shapes (issue 3): d=256, 4 layers, 8 heads (2 KV heads), head_dim 32, MLP 688, vocab 262,
training batch B=8 x T=256; sampling 8 prompts of 32 tokens + 224 new tokens.
"""
import argparse
import json
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, C, I, L, H, HKV, D = 262, 256, 688, 4, 8, 2, 32
B, T, PROMPT = 8, 256, 32


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(C), RMSNorm(C)
        self.q = nn.Linear(C, H * D, bias=False)
        self.k = nn.Linear(C, HKV * D, bias=False)
        self.v = nn.Linear(C, HKV * D, bias=False)
        self.o = nn.Linear(H * D, C, bias=False)
        self.gate = nn.Linear(C, I, bias=False)
        self.up = nn.Linear(C, I, bias=False)
        self.down = nn.Linear(I, C, bias=False)

    def forward(self, x, cos, sin, cache=None, start=0):
        b, t, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, H, D).transpose(1, 2)
        k = self.k(h).view(b, t, HKV, D).transpose(1, 2)
        v = self.v(h).view(b, t, HKV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:  # write into the preallocated cache, attend over its prefix
            kc, vc = cache
            kc[:, :, start:start + t] = k
            vc[:, :, start:start + t] = v
            k, v = kc[:, :, :start + t], vc[:, :, :start + t]
        k = k.repeat_interleave(H // HKV, dim=1)
        v = v.repeat_interleave(H // HKV, dim=1)
        att = q @ k.transpose(-1, -2) / math.sqrt(D)
        if t > 1:
            mask = torch.full((t, k.shape[2]), float("-inf")).triu(k.shape[2] - t + 1)
            att = att + mask
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, H * D)
        x = x + self.o(y)
        return x + self.down(F.silu(self.gate(self.ln2(x))) * self.up(self.ln2(x)))


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.norm = RMSNorm(C)
        self.head = nn.Linear(C, V, bias=False)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, D, 2).float() / D))
        freqs = torch.arange(1024).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, ids, caches=None, start=0):
        t = ids.shape[1]
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        x = self.embed(ids)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, None if caches is None else caches[i], start)
        return self.head(self.norm(x))


def bench_train(model, iters):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    ids = torch.randint(0, 256, (B, T))
    mask = torch.ones(B, T - 1)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(ids)
        lp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
        loss = -(lp * mask).sum() / mask.sum()
        loss.backward()
        opt.step()

    step()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return B * T / statistics.median(times), statistics.median(times)


@torch.no_grad()
def bench_sample(model, iters):
    prompts = torch.randint(0, 256, (B, PROMPT))
    new = T - PROMPT

    def generate():
        caches = [(torch.empty(B, HKV, T, D), torch.empty(B, HKV, T, D)) for _ in range(L)]
        logits = model(prompts, caches, 0)[:, -1]
        out = []
        for i in range(new):
            tok = torch.multinomial(torch.softmax(logits, dim=-1), 1)
            out.append(tok)
            if i + 1 < new:
                logits = model(tok, caches, PROMPT + i)[:, -1]
        return torch.cat(out, dim=1)

    generate()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        generate()
        times.append(time.perf_counter() - t0)
    return B * new / statistics.median(times), statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--what", default="train,sample")
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Policy()
    result = {"threads": args.threads, "torch": torch.__version__}
    if "train" in args.what:
        rate, sec = bench_train(model, args.iters)
        result.update(train_tokens_per_s=rate, train_step_ms=1e3 * sec)
    if "sample" in args.what:
        model.eval()
        rate, sec = bench_sample(model, max(1, args.iters // 3))
        result.update(sample_new_tokens_per_s=rate, sample_ms=1e3 * sec)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(result))


if __name__ == "__main__":
    main()
