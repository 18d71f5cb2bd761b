#!/usr/bin/env python3
"""The figures of a gpu_check.sh run, against the goals (measured and reported, not gates).

usage: summarize.py RESULTS_DIR   (reads the JSON files the steps wrote; prints a table)
"""
import json
import os
import sys

res = sys.argv[1]


def load(name):
    path = os.path.join(res, name + ".json")
    try:
        with open(path) as f:
            text = f.read().strip()
        return json.loads(text) if text else None
    except (OSError, ValueError):
        return None


info, ops, ex, nccl = load("info"), load("ops"), load("executor"), load("nccl")
train, decode, torch_eager = load("train"), load("decode"), load("torch_eager")
decode1 = load("decode_batch1")
train_1p5b = load("train_1p5b")
train_qwen3 = load("train_qwen3")
train_masters = load("train_masters")
rows = []
if info:
    rows.append(("device", "%s, %s" % (info.get("name", "none"), info.get("libraries", ""))))
if ops:
    worst = max((v for k, v in ops.items() if isinstance(v, (int, float)) and not isinstance(v, bool)),
                default=float("nan"))
    rows.append(("op parity vs PyTorch", "%s (worst normalised error %.2e)" %
                 ("pass" if ops.get("pass") else "FAIL", worst)))
if ex:
    rows.append(("sandbox GPU executor", "%d/%d references OK, self-speedup %.3f..%.3f, %.2f s per verify" %
                 (ex.get("ok", 0), ex.get("tasks", 0), ex.get("min_speedup", 0), ex.get("max_speedup", 0),
                  ex.get("mean_verify_s", 0))))
if nccl:
    rows.append(("one-rank NCCL", "%s, sum %.3f ms, ZeRO reduce-scatter + all-gather %.3f ms" % (
        "pass" if nccl.get("pass") else "FAIL", nccl.get("sum_ms", float("nan")),
        nccl.get("zero_collectives_ms", float("nan")))))
tt = torch_eager.get("train") if torch_eager else None
td = torch_eager.get("decode") if torch_eager else None
if train:
    line = "%.1f ms/step, %.0f tok/s, MFU %.1f%% (goal >= 40%%)" % (
        train["step_ms"], train["tokens_per_s"], 100 * train["mfu"])
    if tt:
        line += "; PyTorch eager %.1f ms: %.2fx (goal >= 1.2x)" % (tt["step_ms"], tt["step_ms"] / train["step_ms"])
    rows.append(("train step, ~124M, T=%d" % train["seq"], line))
if train_1p5b:
    rows.append(("train step, 1.5B, T=%d" % train_1p5b["seq"],
                 "%.1f ms/step, MFU %.1f%%; memory %.2f GiB, leap plan %.2f GiB (plan/measured %.3f; "
                 "the issue's check: the plan within 10%%)" % (
                     train_1p5b["step_ms"], 100 * train_1p5b["mfu"], train_1p5b["step_memory_gib"],
                     train_1p5b["plan_gib"], train_1p5b["plan_over_measured"])))
if train_qwen3:
    rows.append(("train step, Qwen3-0.6B shapes, T=%d" % train_qwen3["seq"],
                 "%.1f ms/step, MFU %.1f%%; memory %.2f GiB, leap plan %.2f GiB (plan/measured %.3f)" % (
                     train_qwen3["step_ms"], 100 * train_qwen3["mfu"], train_qwen3["step_memory_gib"],
                     train_qwen3["plan_gib"], train_qwen3["plan_over_measured"])))
if train_masters:
    rows.append(("train step, ~124M, bf16 matrices + fp32 masters",
                 "%.1f ms/step; memory %.2f GiB, leap plan %.2f GiB (plan/measured %.3f); log-probs against "
                 "fp32 weights of the same values: max |diff| %.3g (expected 0)" % (
                     train_masters["step_ms"], train_masters["step_memory_gib"], train_masters["plan_gib"],
                     train_masters["plan_over_measured"], train_masters["logp_max_abs_diff_vs_fp32_weights"])))
if decode:
    line = "%.3f ms/step on the device, %.0f tok/s, %.1f%% of the HBM bound (goal >= 50%%)" % (
        decode["step_ms"], decode["tokens_per_s"], 100 * decode["fraction_of_hbm_bound"])
    if "logits_download_ms" in decode:
        line += "; logits download %.3f ms, host step with it %.3f ms" % (
            decode["logits_download_ms"], decode["host_step_ms_with_download"])
    if td:
        # PyTorch's figure is host-timed with the logits brought to the host: compared with ours
        # timed the same way.
        ours = decode.get("host_step_ms_with_download", decode["step_ms"])
        line += "; PyTorch eager %.3f ms (host, with the logits): %.2fx (goal >= 1.2x)" % (
            td["step_ms"], td["step_ms"] / ours)
    rows.append(("decode, batch %d" % decode["batch"], line))
if decode and decode1:
    rows.append(("decode, batch 1", "%.3f ms/step on the device, %.0f tok/s; batch %d gives %.1fx the tokens/s" % (
        decode1["step_ms"], decode1["tokens_per_s"], decode["batch"], decode["tokens_per_s"] / decode1["tokens_per_s"])))
print("== figures")
for k, v in rows:
    print("%-28s %s" % (k, v))
with open(os.path.join(res, "figures.json"), "w") as f:
    json.dump(dict(rows), f, indent=1)
