#!/usr/bin/env python3
"""Dev check: LEAP's next-token log-probs against Hugging Face transformers' on one model folder.

For each text, the ids come from transformers' AutoTokenizer on the folder (plain text: encode()
with its defaults, i.e. special-token strings parsed and the post-processor's BOS added; a chat:
apply_chat_template(..., tokenize=False, add_generation_prompt=True), then encode() with
add_special_tokens=False, since the template writes its own BOS). The same ids go to both
  transformers: AutoModelForCausalLM.from_pretrained(DIR, torch_dtype=float32), eval mode,
                log_softmax of the logits, entry t-1 = log p(id t | ids before it)
  LEAP:         `leap score --model DIR --tokens ...` (the same entries)
and the largest |difference| per text is printed. Exit status 1 if one exceeds --tol.

On the way it also checks, unless --no-tokenize-check, that `leap tokenize` gives the same ids
for each text and the same rendered chat (text and ids) as transformers; a mismatch also makes the
exit status 1.

    .venv-transformers/bin/python tools/oracle/check_transformers_logprobs.py --model models/tiny-qwen2
    .venv-transformers/bin/python tools/oracle/check_transformers_logprobs.py --model DIR \\
        --leap build/src/apps/leap --text "some text" --text "another" --tol 1e-4
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder only; never the network
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

CUDA_SNIPPET = """__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int n) {
  extern __shared__ float buf[];
  const float* row = x + blockIdx.x * n;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, row[i]);
  buf[threadIdx.x] = m;
  __syncthreads();
  // ... reduce, exponentiate, normalise
  y[blockIdx.x * n + threadIdx.x] = __expf(row[threadIdx.x] - buf[0]);
}
"""

CHAT = [
    {"role": "system", "content": "You write fast CUDA kernels."},
    {"role": "user", "content": "Write a kernel that adds two float vectors of length n."},
    {"role": "assistant", "content": "```cuda\n__global__ void add(const float* a, const float* b, "
                                     "float* c, int n) {\n  int i = blockIdx.x * blockDim.x + "
                                     "threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n```"},
    {"role": "user", "content": "Now make it use float4 loads."},
]

CJK_EMOJI = "你好，世界！これは日本語です。한국어 텍스트. Emoji: 😀👍🏽🇫🇷 ✅ — naïve café, Straße, ½ ≤ ∞"


def default_leap():
    for rel in ("build/leap", "build/src/apps/leap"):
        if (ROOT / rel).exists():
            return str(ROOT / rel)
    return str(ROOT / "build/src/apps/leap")


def run_leap(leap, args):
    """Runs leap and returns its stdout parsed as JSON. The binary may be rebuilt while this
    runs: a missing one is waited for (up to a minute)."""
    for _ in range(60):
        if os.path.exists(leap):
            break
        time.sleep(1)
    r = subprocess.run([leap] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"leap {' '.join(args[:1])} failed (exit {r.returncode}):\n{r.stderr.strip()}")
    return json.loads(r.stdout)


def hf_logprobs(model, ids):
    with torch.no_grad():
        logits = model(torch.tensor([ids]), use_cache=False).logits[0].to(torch.float64)
    lp = torch.log_softmax(logits, dim=-1)
    return [lp[t - 1, ids[t]].item() for t in range(1, len(ids))]


def leap_tokenize(leap, folder, text, add_special):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        args = ["tokenize", "--tokenizer", folder, "--input", f.name, "--parse-special"]
        if add_special:
            args.append("--add-special-tokens")
        return run_leap(leap, args)["ids"]
    finally:
        os.unlink(f.name)


def leap_chat(leap, folder, messages):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".json", delete=False) as f:
        json.dump({"messages": messages, "add_generation_prompt": True}, f)
    try:
        return run_leap(leap, ["tokenize", "--tokenizer", folder, "--chat", f.name])
    finally:
        os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser(description="LEAP's log-probs against transformers' on a folder")
    ap.add_argument("--model", required=True, help="HF model folder (config.json, model.safetensors, tokenizer)")
    ap.add_argument("--leap", default=default_leap(), help="the leap binary (default: %(default)s)")
    ap.add_argument("--text", action="append", default=None,
                    help="a plain text to score (repeatable); replaces the default texts")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest |diff| allowed (default 1e-4)")
    ap.add_argument("--no-tokenize-check", action="store_true",
                    help="skip comparing `leap tokenize` with transformers' ids and chat text")
    args = ap.parse_args()

    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"tokenizers {tokenizers.__version__}")
    print(f"model {args.model}, leap {args.leap}, tol {args.tol:g}")
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32).eval()

    # (name, ids, the text, whether it is the rendered chat)
    cases = []
    if args.text:
        cases += [(f"text{i + 1}", tok.encode(t), t, False) for i, t in enumerate(args.text)]
    else:
        chat_text = tok.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
        cases.append(("cuda", tok.encode(CUDA_SNIPPET), CUDA_SNIPPET, False))
        cases.append(("chat", tok.encode(chat_text, add_special_tokens=False), chat_text, True))
        cases.append(("cjk+emoji", tok.encode(CJK_EMOJI), CJK_EMOJI, False))

    failed = False
    for name, ids, text, is_chat in cases:
        if len(ids) < 2:
            print(f"{name}: fewer than 2 ids, skipped")
            continue
        ref = hf_logprobs(model, ids)
        got = run_leap(args.leap, ["score", "--model", args.model,
                                   "--tokens", ",".join(map(str, ids))])["logprobs"]
        if len(got) != len(ref):
            print(f"{name}: leap gave {len(got)} log-probs for {len(ids)} ids (expected {len(ref)})")
            failed = True
            continue
        diff = max(abs(a - b) for a, b in zip(ref, got))
        verdict = "ok" if diff <= args.tol else "FAIL"
        failed |= diff > args.tol
        mean = sum(ref) / len(ref)
        print(f"{name:10s} {len(ids):4d} ids  max|diff| {diff:.3e}  {verdict}   "
              f"(transformers' log-probs: min {min(ref):.3f}, mean {mean:.3f}, max {max(ref):.3f})")

        if args.no_tokenize_check:
            continue
        if is_chat:
            leap_out = leap_chat(args.leap, args.model, CHAT)
            same_text = leap_out["text"] == text
            same_ids = leap_out["ids"] == ids
            print(f"{'':10s} leap tokenize --chat: text {'same' if same_text else 'DIFFERENT'}, "
                  f"ids {'same' if same_ids else 'DIFFERENT'}")
            if not same_text:
                print(f"{'':10s}   transformers: {text!r}\n{'':10s}   leap:         {leap_out['text']!r}")
            failed |= not (same_text and same_ids)
        else:
            leap_ids = leap_tokenize(args.leap, args.model, text, add_special=True)
            print(f"{'':10s} leap tokenize: ids {'same' if leap_ids == ids else 'DIFFERENT'}")
            if leap_ids != ids:
                print(f"{'':10s}   transformers: {ids}\n{'':10s}   leap:         {leap_ids}")
                failed = True

    print("FAILED" if failed else "all within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
