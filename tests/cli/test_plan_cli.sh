#!/usr/bin/env bash
# `leap plan` as a user runs it, on the committed config.json files of Qwen2.5-Coder-1.5B and 7B
# and the demo models: the parameter count equals transformers' (tests/cli/plan_param_golden.json,
# from tools/oracle/make_plan_param_golden.py), the JSON has its documented shape, the 7B policy
# with one 4k-token sequence does not fit a 141 GiB GPU replicated (fp32 master and Adam state)
# while the 1.5B one does, ZeRO stages 1 and 2 shrink what they shard as worked out by hand, the 7B
# config (stage 2) fits an H200's 140 GiB but not 80, a plan that does not fit lists settings whose
# promised totals leap plan then gives, an evaluation's plan (--for eval) leaves out exactly the
# gradient, optimizer state and KL reference and fits the 7B config on 80 GB, and bad input exits
# 2 naming the problem.
# Run by ctest with LEAP and LEAP_SOURCE_DIR set.
set -u
source "$(dirname "$0")/check_lib.sh"
cd "$LEAP_SOURCE_DIR" || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gpu=(--config configs/demo_v1.ini --backend.name cuda --train.micro_batch_seqs 1
     --prompt.max_prompt_tokens 3072 --sampler.max_new_tokens 1024 --ranks 8 --gpu-memory-gib 141)

for folder in models/qwen2.5-coder-1.5b models/qwen2.5-coder-7b models/demo models/demo-v2; do
  "$LEAP" plan "${gpu[@]}" --model.path "$folder" --format json > "$tmp/plan.json" 2> "$tmp/err" \
    || { echo "FAIL plan $folder: exit $?"; cat "$tmp/err"; fail=1; continue; }
  /usr/bin/python3 - "$tmp/plan.json" tests/cli/plan_param_golden.json "$folder" <<'PY' || fail=1
import json, sys
plan, golden, folder = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
want = golden["parameters"][folder]
c = json.load(open(folder + "/config.json"))
C, I, V, L, H = (c[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_hidden_layers", "num_attention_heads"))
D, KV = c.get("head_dim", C // H), c.get("num_key_value_heads", H)
# The GEMMs' bf16 copies: every layer's matrices and the LM head (an untied embedding has none).
gemm = L * (H * D * C + 2 * KV * D * C + C * H * D + 3 * I * C) + V * C
got = plan["model"]["parameters"]
kinds = ["weights", "master_weights", "gradients", "optimizer_state", "activations", "logits",
         "kl_reference", "kv_cache", "workspace"]
per = plan["per_rank"]
errors = []
if got != want:
    errors.append(f"parameters {got}, transformers counts {want}")
if sorted(per) != sorted(kinds + ["total"]):
    errors.append(f"per_rank keys {sorted(per)}")
elif per["total"] != sum(per[k] for k in kinds):
    errors.append("total is not the sum of the kinds")
if per.get("master_weights") != 4 * want or per.get("weights") != 2 * gemm:
    errors.append(f"fp32 masters of every parameter and bf16 copies of the {gemm} GEMM weights expected, "
                  f"got {per.get('master_weights')} and {per.get('weights')}")
if plan["fits"] != (per["total"] <= plan["device_bytes"]) or plan["device_bytes"] != 141 * 2**30:
    errors.append("fits does not follow total and --gpu-memory-gib")
if not isinstance(plan["sandbox"].get("largest_task", {}).get("buffer_bytes"), int):
    errors.append("no sandbox.largest_task")
print(("FAIL " if errors else "ok   ") + f"plan-json {folder}: {got} parameters, total {per['total']}, "
      f"fits {plan['fits']}" + ("; " + "; ".join(errors) if errors else ""))
sys.exit(1 if errors else 0)
PY
done

check plan-7b-does-not-fit 0 "fits: NO, [0-9.]+ GiB over the 141.00 GiB" -- \
  "$LEAP" plan "${gpu[@]}" --model.path models/qwen2.5-coder-7b
check plan-1.5b-fits 0 "fits: yes" -- "$LEAP" plan "${gpu[@]}" --model.path models/qwen2.5-coder-1.5b
check plan-kl-reference 0 "kl_reference +[0-9]{10,} " -- \
  "$LEAP" plan "${gpu[@]}" --model.path models/qwen2.5-coder-7b --rl.kl_beta 0.01
# ZeRO stage 1 over 8 ranks: AdamW's state is an eighth of the replicated one.
"$LEAP" plan --config configs/demo_v1.ini --model.path models/qwen2.5-coder-7b --ranks 8 --optim.zero_stage 1 \
  --format json > "$tmp/z1.json" && "$LEAP" plan --config configs/demo_v1.ini --model.path models/qwen2.5-coder-7b \
  --ranks 8 --format json > "$tmp/z0.json" && /usr/bin/python3 - "$tmp/z0.json" "$tmp/z1.json" <<'PY' || fail=1
import json, sys
z0, z1 = (json.load(open(p))["per_rank"]["optimizer_state"] for p in sys.argv[1:])
ok = z1 * 8 >= z0 and z1 * 8 - z0 < 64
print(("ok   " if ok else "FAIL ") + f"plan-zero-stage-1: optimizer state {z1} bytes on each of 8 ranks, {z0} replicated")
sys.exit(0 if ok else 1)
PY
# ZeRO stage 2 over 8 ranks: the gradient is an eighth, plus two layers' buffers (one in the backward, one in its reduce-scatter) and the rest's.
"$LEAP" plan --config configs/demo_v1.ini --model.path models/qwen2.5-coder-7b --ranks 8 --optim.zero_stage 2 \
  --format json > "$tmp/z2.json" && /usr/bin/python3 - "$tmp/z0.json" "$tmp/z2.json" models/qwen2.5-coder-7b/config.json <<'PY' || fail=1
import json, sys
z0, z2 = (json.load(open(p))["per_rank"] for p in sys.argv[1:3])
c = json.load(open(sys.argv[3]))
C, I, V, L = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
H, KV = c["num_attention_heads"], c["num_key_value_heads"]
D = C // H
# One layer (q, k, v, o, gate, up, down, two norms, q/k/v biases) and the rest (embedding, untied LM head, final norm).
layer = H * D * C + 2 * KV * D * C + C * H * D + 3 * I * C + 2 * C + H * D + 2 * KV * D
rest = 2 * V * C + C
P = z0["gradients"] // 4
want = 4 * ((P + 7) // 8 + 2 * layer + rest)
ok = z2["gradients"] == want and z2["optimizer_state"] * 8 - z0["optimizer_state"] < 64
print(("ok   " if ok else "FAIL ") + f"plan-zero-stage-2: gradients {z2['gradients']} bytes on each of 8 ranks "
      f"(expected {want} by hand), {z0['gradients']} replicated")
sys.exit(0 if ok else 1)
PY
check plan-zero-stage-2-cuda-note 0 "optim.zero_stage = 2 on backend.name = cuda uses NCCL.*run on one GPU only, one rank" -- \
  "$LEAP" plan "${gpu[@]}" --model.path models/qwen2.5-coder-7b --optim.zero_stage 2
# The paper's configs parse and plan as jobscripts/README.md shows.
check plan-config-1.5b 0 "fits: yes.*sandbox: 2 rank\\(s\\) per node x 2 worker" -- bash -c \
  "'$LEAP' plan --config configs/qwen2.5-coder-1.5b.ini --ranks 6 --gpu-memory-gib 79 | tr '\n' ' '"
check plan-config-7b 0 "ZeRO stage 2, fp32 master weights in the optimizer state.*decoding batches of 32.*master_weights .*this rank's 1/8.*kl_reference .*kv_cache .*bf16, paged.*fits: yes, 66.58 of 140.00 GiB" -- bash -c \
  "'$LEAP' plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --gpu-memory-gib 140 | tr '\n' ' '"
# A sandbox rank's caches: the config's 6 GiB of reference outputs and 2 workers' 1 GiB of inputs;
# the options move them, in the text and the JSON.
check plan-sandbox-caches 0 "sandbox host memory: up to 8.00 GiB a sandbox rank for caches: reference outputs 6.00 GiB.*2 x 1.00 GiB" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8
check plan-sandbox-caches-json 0 '"cache_bytes": 1610612736' -- "$LEAP" plan --config configs/qwen2.5-coder-7b.ini \
  --ranks 8 --sandbox.reference_cache_mb 512 --sandbox.workers 4 --sandbox.input_cache_mb 256 --format json
# The issue's target: the 7B config fits the 8 policy GPUs of one 80 GB node (79 GiB usable: leap
# plan's default) with at least 10% headroom. It does with the fp32 masters in the optimizer
# (the config's optim.master_weights = optimizer, beside ZeRO stage 2), and not with fp32 replicas,
# where leap plan names that setting as the one that fits.
check plan-config-7b-80gib 0 "fits: yes, 66.58 of 80.00" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --gpu-memory-gib 80
check plan-config-7b-replica 0 "fits: NO, 11.36 GiB over.*--optim.master_weights optimizer +saves +23.78 +-> +66.58 +fits" -- bash -c \
  "'$LEAP' plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --optim.master_weights replica | tr '\n' ' '"
if "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --format json > "$tmp/headroom.json" \
  && /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
total, device = j["per_rank"]["total"], j["device_bytes"]
headroom = 1 - total / device
print(("ok   " if headroom >= 0.10 else "FAIL ") + "plan-7b-headroom: %.1f%% of %.2f GiB free" % (100 * headroom, device / 2**30))
sys.exit(0 if headroom >= 0.10 else 1)' "$tmp/headroom.json"; then :; else fail=1; fi
# The decoding batch (sampler.batch_seqs) changes the KV cache (its slots, by hand from config.json)
# and the sampler's logits rows, never the activations, which a prefill of one micro-batch fits.
"$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --sampler.batch_seqs 0 --format json > "$tmp/b1.json" &&
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --sampler.batch_seqs 64 --format json > "$tmp/b64.json" &&
  /usr/bin/python3 - "$tmp/b1.json" "$tmp/b64.json" models/qwen2.5-coder-7b/config.json <<'PY' || fail=1
import json, sys
b1, b64 = (json.load(open(p)) for p in sys.argv[1:3])
c = json.load(open(sys.argv[3]))
KD, L, V = c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"]), c["num_hidden_layers"], c["vocab_size"]
blocks = 63 * (4096 // 16)  # 63 more slots of 4096 positions in blocks of 16
kv_pool = 2 * L * blocks * 16 * KD * 2  # keys and values, bf16
d = {k: b64["per_rank"][k] - b1["per_rank"][k] for k in b1["per_rank"]}
errors = []
if (b1["generation_batch_seqs"], b64["generation_batch_seqs"]) != (1, 64):
    errors.append(f"generation_batch_seqs {b1['generation_batch_seqs']}, {b64['generation_batch_seqs']}")
if d["activations"] or d["logits"]:
    errors.append(f"activations or logits changed: {d['activations']}, {d['logits']}")
if not kv_pool < d["kv_cache"] < 1.02 * kv_pool:  # the pool, plus the decode scratch of 63 rows
    errors.append(f"kv_cache grew {d['kv_cache']}, the pool alone {kv_pool}")
if d["workspace"] != 4 * 63 * V:
    errors.append(f"workspace grew {d['workspace']}, 63 logits rows are {4 * 63 * V}")
print(("FAIL " if errors else "ok   ") + "plan-generation-batch: " + ("; ".join(errors) or f"kv_cache +{d['kv_cache']} bytes"))
sys.exit(1 if errors else 0)
PY
# The KL reference's dtype: bf16 by default on CUDA (its matrices; norms and biases stay fp32), the fp32 scratch of one layer and of
# the LM head with the final norm, and the GEMMs' bf16 copies of that scratch's matrices (by hand, from
# config.json); fp32 when asked: the copy and the compute copies of its matrices (all but the untied embedding).
"$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --format json > "$tmp/klbf16.json" &&
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --rl.kl_reference_dtype fp32 --format json \
  > "$tmp/klfp32.json" && /usr/bin/python3 - "$tmp/klbf16.json" "$tmp/klfp32.json" models/qwen2.5-coder-7b/config.json <<'PY' || fail=1
import json, sys
bf16, fp32 = (json.load(open(p)) for p in sys.argv[1:3])
c = json.load(open(sys.argv[3]))
C, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
H, KV = c["num_attention_heads"], c["num_key_value_heads"]
D = C // H
layer = H * D * C + 2 * KV * D * C + C * H * D + 3 * I * C + 2 * C + H * D + 2 * KV * D
P = bf16["model"]["parameters"]
vectors = c["num_hidden_layers"] * (2 * C + H * D + 2 * KV * D) + C  # norms and q/k/v biases, kept fp32
layer_matrices = H * D * C + 2 * KV * D * C + C * H * D + 3 * I * C
want_bf16 = 2 * (P - vectors) + 4 * vectors + 4 * (layer + V * C + C) + 2 * (layer_matrices + V * C)
want_fp32 = 4 * P + 2 * (P - vectors - V * C)  # 7B's embedding is untied: no compute copy
got_bf16, got_fp32 = bf16["per_rank"]["kl_reference"], fp32["per_rank"]["kl_reference"]
ok = got_bf16 == want_bf16 and got_fp32 == want_fp32
print(("ok   " if ok else "FAIL ") + f"plan-kl-reference-dtype: bf16 {got_bf16} bytes (by hand {want_bf16}), "
      f"fp32 {got_fp32} (by hand {want_fp32})")
sys.exit(0 if ok else 1)
PY
check plan-kl-bad-dtype 2 "rl.kl_reference_dtype" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --rl.kl_reference_dtype f16
# The KV cache's dtype: bf16 by default on CUDA (above), fp32 when asked, and twice the bytes.
check plan-kv-fp32 0 "kv_cache +18840879488 +17.55  fp32, paged" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --sampler.kv_cache_dtype fp32
# bf16 gradient communication on CUDA: NCCL's staging of one 7B layer (233057792 values) in bf16.
check plan-grad-comm-bf16 0 "workspace +1020353536 .*NCCL's bf16 gradient staging" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --optim.grad_comm_dtype bf16
check plan-kv-cpu-auto 0 "kv_cache .*fp32, paged" -- "$LEAP" plan --config configs/demo_v1.ini
check plan-kv-bad-dtype 2 "sampler.kv_cache_dtype" -- \
  "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --sampler.kv_cache_dtype f16
# Not a number of GiB: nan passes every comparison, inf no device has.
check plan-memory-nan 2 "plan.gpu_memory_gib' = nan .*not a finite number" -- \
  "$LEAP" plan --config configs/demo_v1.ini --gpu-memory-gib nan
check plan-memory-inf 2 "plan.gpu_memory_gib' = inf .*not a finite number" -- \
  "$LEAP" plan --config configs/demo_v1.ini --gpu-memory-gib inf
# A suite that cannot be read: the JSON says why it has no largest task, as the table does.
check plan-json-suite-unread 0 '"largest_task_error": ".*missing.jsonl' -- \
  "$LEAP" plan --config configs/demo_v1.ini --tasks.suite "$tmp/missing.jsonl" --format json
# A plan that does not fit lists the memory settings the run does not use, what each saves and what
# all give; each suggestion, passed as the option it names, gives exactly the total it promised.
base=(plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --optim.zero_stage 0 --train.activation_checkpointing false
      --rl.kl_reference_dtype fp32 --sampler.kv_cache_dtype fp32 --train.micro_batch_seqs 2)
check plan-remedies 0 "fits: NO.*settings that lower it.*--optim.zero_stage 2 +saves.*all of them +saves" -- \
  bash -c "'$LEAP' ${base[*]} | tr '\n' ' '"
"$LEAP" "${base[@]}" --format json > "$tmp/remedies.json" && /usr/bin/python3 - "$LEAP" "$tmp/remedies.json" "${base[@]}" <<'PY' || fail=1
import json, subprocess, sys
leap, plan, base = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3:]
def total(extra):
    # An option may be given once: a suggestion replaces the base's value of the same option.
    args = list(base)
    for i in range(0, len(extra), 2):
        if extra[i] in args:
            args[args.index(extra[i]) + 1] = extra[i + 1]
        else:
            args += extra[i:i + 2]
    out = subprocess.run([leap, *args, "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["per_rank"]["total"]
errors, every = [], []
names = [r["option"] for r in plan["remedies"]]
for want in ["optim.zero_stage", "train.activation_checkpointing", "train.micro_batch_seqs",
             "rl.kl_reference_dtype", "sampler.kv_cache_dtype", "sampler.kv_keep_sequences",
             "sampler.batch_seqs"]:
    if want not in names:
        errors.append(f"{want} not suggested")
for r in plan["remedies"]:
    opt = [f"--{r['option']}", r["value"]]
    every += opt
    got = total(opt)
    if got != r["total"] or r["saves"] != plan["per_rank"]["total"] - got or r["saves"] <= 0:
        errors.append(f"{r['option']} {r['value']}: promised {r['total']}, leap plan with it {got}")
got = total(every)
if got != plan["with_all_remedies"]["total"]:
    errors.append(f"all remedies: promised {plan['with_all_remedies']['total']}, leap plan with them {got}")
if errors:
    sys.exit("FAIL plan-remedies-json: " + "; ".join(errors))
print(f"ok   plan-remedies-json: {len(names)} settings, each and all as promised (all: {got} bytes)")
PY
if out=$("$LEAP" plan --config configs/qwen2.5-coder-1.5b.ini --ranks 6 --format json); then
  grep -q remedies <<<"$out" && { echo "FAIL a plan that fits lists remedies"; fail=1; } || echo "ok   plan-fits-no-remedies"
else echo "FAIL plan-fits-no-remedies: leap plan failed"; fail=1; fi
# Only settings that lower this plan: on a 2-layer model over 2 ranks ZeRO-2's two layer buffers
# outweigh the shard, and a bf16 reference's scratch its copy, so neither is offered.
if out=$("$LEAP" plan --config configs/demo_v1.ini --model.path models/tiny-llama3 --ranks 2 --optim.zero_stage 1 \
    --rl.kl_beta 0.1 --rl.kl_reference_dtype fp32 --gpu-memory-gib 0.001); then
  if grep -q -- "--optim.zero_stage 2\|--rl.kl_reference_dtype bf16\|saves *-" <<<"$out" || ! grep -q "settings that lower it" <<<"$out"; then
    echo "FAIL plan-remedies-only-lower: $(grep -A8 'settings that lower' <<<"$out")"; fail=1
  else echo "ok   plan-remedies-only-lower"; fi
else echo "FAIL plan-remedies-only-lower: leap plan failed"; fail=1; fi
# SFT samples nothing and loads no KL reference: neither is counted, and no sampler setting is
# offered to lower it (the same config as RL counts both).
sft_plan() { "$LEAP" plan --config configs/sft_demo_v2.ini --model.path models/demo-v2 --rl.kl_beta 0.1 --gpu-memory-gib 0.001 "$@"; }
if sft_plan --format json > "$tmp/sft.json" && sft_plan --train.mode rl --format json > "$tmp/rl.json"; then
  /usr/bin/python3 - "$tmp/sft.json" "$tmp/rl.json" <<'PY' || fail=1
import json, sys
sft, rl = (json.load(open(p)) for p in sys.argv[1:3])
errors = []
if sft["per_rank"].get("kv_cache", 0) != 0 or sft["per_rank"].get("kl_reference", 0) != 0:
    errors.append(f"SFT counts kv_cache {sft['per_rank'].get('kv_cache')} and kl_reference {sft['per_rank'].get('kl_reference')}")
if any(r["option"].startswith(("sampler.", "rl.")) for r in sft.get("remedies", [])):
    errors.append(f"SFT is offered {[r['option'] for r in sft['remedies']]}")
if not (rl["per_rank"].get("kv_cache", 0) > 0 and rl["per_rank"].get("kl_reference", 0) > 0):
    errors.append("the RL plan of the same config lacks its KV cache or KL reference")
if errors:
    sys.exit("FAIL plan-sft: " + "; ".join(errors))
print("ok   plan-sft: no KV cache, no KL reference, no sampler remedies")
PY
else echo "FAIL plan-sft: leap plan failed"; fail=1; fi
# A Qwen3 model (per-head q/k norms): Qwen3-8B's parameter count is its safetensors index's
# total_size (16,381,470,720 bf16 bytes) halved; the norms' 2 x 36 x 128 floats are counted.
check plan-qwen3-8b-parameters 0 "models/qwen3-8b \(qwen3, 8190735360 parameters\)" -- \
  "$LEAP" plan "${gpu[@]}" --model.path models/qwen3-8b

# leap eval's ranks (--for eval) hold no gradient, optimizer state, fp32 masters (the config's
# optim.master_weights = optimizer keeps them in the optimizer) or KL reference, and their
# activations are the prefill's (prompts only): the 7B config's evaluation fits an 80 GB GPU, and
# the two plans differ by exactly what evaluation leaves out.
check plan-eval-7b-80gib 0 "of leap eval.*master_weights +0 .*gradients +0 .*optimizer_state +0 .*activations .*prefill's arena.*T=3072.*kl_reference +0 .*fits: yes, 26.94 of 79.00" -- bash -c \
  "'$LEAP' plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --for eval --gpu-memory-gib 79 | tr '\n' ' '"
"$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --format json > "$tmp/train7b.json" \
  && "$LEAP" plan --config configs/qwen2.5-coder-7b.ini --ranks 8 --for eval --format json > "$tmp/eval7b.json" \
  && /usr/bin/python3 - "$tmp/train7b.json" "$tmp/eval7b.json" <<'PY' || fail=1
import json, sys
train, ev = (json.load(open(p)) for p in sys.argv[1:3])
t, e = train["per_rank"], ev["per_rank"]
errors = []
if ev.get("for") != "eval" or train.get("for") != "train":
    errors.append(f"for: {train.get('for')}, {ev.get('for')}")
# Only training has a ZeRO stage and training sequences: an evaluation's plan does not claim them.
if any(k in ev for k in ("zero_stage", "train_tokens")) or not all(k in train for k in ("zero_stage", "train_tokens")):
    errors.append("zero_stage/train_tokens: in train " + str([k in train for k in ("zero_stage", "train_tokens")])
                  + ", in eval " + str([k in ev for k in ("zero_stage", "train_tokens")]))
same = ["weights", "kv_cache"]
if any(t[k] != e[k] for k in same) or train.get("master_weights") != "optimizer" or ev.get("master_weights") != "optimizer":
    errors.append("weights or KV cache differ, or the masters are not the optimizer's: "
                  + ", ".join(f"{k} {t[k]} vs {e[k]}" for k in same)
                  + f", master_weights {train.get('master_weights')} vs {ev.get('master_weights')}")
if any(e[k] != 0 for k in ("master_weights", "gradients", "optimizer_state", "kl_reference")) or not 0 < e["activations"] < t["activations"]:
    errors.append(f"eval counts {e}")
print(("FAIL " if errors else "ok   ") + f"plan-eval-vs-train: {e['total']} against {t['total']} bytes" + ("; " + "; ".join(errors) if errors else ""))
sys.exit(1 if errors else 0)
PY
check plan-cuda-uncounted 0 "not counted: the CUDA context.*NCCL" -- "$LEAP" plan --config configs/qwen2.5-coder-7b.ini
check plan-bad-for 2 "plan.for" -- "$LEAP" plan --config configs/demo_v1.ini --for serve
check plan-no-model 2 "model.path is not set" -- "$LEAP" plan
check plan-no-config-json 2 "$tmp/config.json" -- "$LEAP" plan --config configs/demo_v1.ini --model.path "$tmp"
check plan-bad-format 2 "format" -- "$LEAP" plan --model.path models/demo --format yaml
check plan-help 0 "--gpu-memory-gib" -- "$LEAP" plan --help
exit $fail
