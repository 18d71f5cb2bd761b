#!/usr/bin/env python3
"""Writes the golden file of the GRPO loss: inputs, loss, d loss / d logp per token and the mean k3 KL, computed
with PyTorch autograd in float64, for every aggregation mode, with PPO clipping (and dual clip)
active on some tokens. The C++ test (test_grpo_golden.cpp) recomputes each case and compares.

The surrogate follows veRL's compute_policy_loss (clip, dual-clip) and low_var_kl (k3) without
its KL clamp. Usage: grpo_loss_golden.py OUT.json
"""
import json
import sys

import torch

MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


def make_inputs(gen, n_seq=6, max_len=9):
    lens = torch.randint(1, max_len + 1, (n_seq,), generator=gen).tolist()
    n = sum(lens)
    old = -torch.rand(n, generator=gen, dtype=torch.float64) * 3.0 - 0.05
    # Large steps so that many ratios leave [1 - eps_low, 1 + eps_high] and some exceed the
    # dual-clip constant.
    logp = old + torch.randn(n, generator=gen, dtype=torch.float64) * 0.6
    ref = old + torch.randn(n, generator=gen, dtype=torch.float64) * 0.2
    mask = (torch.rand(n, generator=gen) > 0.2).double()
    mask[0] = 1.0
    adv = torch.randn(n_seq, generator=gen, dtype=torch.float64)
    adv[0], adv[1] = 1.0, -1.0  # both signs for sure
    logp[lens[0]] = old[lens[0]] + 1.5  # ratio 4.5 on a negative advantage: dual clip acts
    mask[lens[0]] = 1.0
    # Values exactly representable in float32, as the C++ side reads them.
    f32 = lambda t: t.float().double()
    return dict(logp=f32(logp), old_logp=f32(old), ref_logp=f32(ref), mask=mask, adv=f32(adv), lens=lens)


def loss_of(inp, mode, eps_low, eps_high, dual_clip, beta, norm_tokens):
    logp = inp["logp"].clone().requires_grad_(True)
    lens = inp["lens"]
    seq = torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens))
    adv = inp["adv"][seq]
    mask = inp["mask"]
    ratio = torch.exp(logp - inp["old_logp"])
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    pg = torch.maximum(pg1, pg2)
    clipped = (pg2 > pg1) & (mask > 0)
    if dual_clip > 1:
        pg3 = -adv * dual_clip
        dual = (adv < 0) & (pg3 < pg) & (mask > 0)
        assert dual.any(), "the golden case must exercise the dual clip"
        clipped = clipped | dual
        pg = torch.where(adv < 0, torch.minimum(pg, pg3), pg)
    loss_tok = pg
    kl_mean = 0.0  # what /steps records as kl: k3 averaged over the masked tokens
    if beta > 0:
        d = inp["ref_logp"] - logp
        k3 = torch.exp(d) - d - 1
        loss_tok = loss_tok + beta * k3
        kl_mean = ((k3 * mask).sum() / mask.sum()).item()
    # The whole batch is one part: the global normaliser is its own.
    if mode == "token-mean":
        loss = (loss_tok * mask).sum() / mask.sum()
    else:
        per_seq = torch.zeros(len(lens), dtype=torch.float64).index_add(0, seq, loss_tok * mask)
        count = torch.zeros(len(lens), dtype=torch.float64).index_add(0, seq, mask)
        keep = count > 0
        if mode == "seq-mean-token-mean":
            per_seq = per_seq[keep] / count[keep]
        else:
            per_seq = per_seq[keep] / norm_tokens
        loss = per_seq.sum() / keep.sum()
    loss.backward()
    return loss.item(), logp.grad.tolist(), int(clipped.sum().item()), kl_mean


def main():
    out_path = sys.argv[1]
    gen = torch.Generator().manual_seed(20260801)
    cases = []
    configs = [(m, 0.2, 0.28, 3.0, 0.05) for m in MODES] + [(m, 0.2, 0.2, 0.0, 0.0) for m in MODES]
    for mode, eps_low, eps_high, dual_clip, beta in configs:
        inp = make_inputs(gen)
        loss, grad, n_clipped, kl_mean = loss_of(inp, mode, eps_low, eps_high, dual_clip, beta, 16.0)
        assert n_clipped > 0, "the golden case must exercise clipping"
        cases.append({
            "aggregation": mode, "clip_eps_low": eps_low, "clip_eps_high": eps_high,
            "dual_clip": dual_clip, "kl_beta": beta, "loss_norm_tokens": 16.0,
            "lens": inp["lens"], "logp": inp["logp"].tolist(), "old_logp": inp["old_logp"].tolist(),
            "ref_logp": inp["ref_logp"].tolist(), "mask": inp["mask"].tolist(),
            "advantages": inp["adv"].tolist(), "loss": loss, "dlogp": grad, "clipped_tokens": n_clipped,
            "kl_mean": kl_mean,
        })
    with open(out_path, "w") as f:
        json.dump({"version": 1, "generator": "tests/rl/grpo_loss_golden.py", "cases": cases}, f, indent=1)


if __name__ == "__main__":
    main()
