#!/usr/bin/env python3
"""Dev script: the golden of Llama-3.1's RoPE scaling (rope_type "llama3") for a CI test.

models/tiny-llama3 with a rope_scaling block added to its config.json (the weights unchanged) is
opened by transformers, and its next-token log-probs on a fixed 180-id sequence are written to
tests/model/rope_scaling_golden.json with the config block, the ids and the versions. The scaling
is made to matter on a short sequence: original_max_position_embeddings 64, so that low and
medium frequencies of the tiny model's 8 rotary pairs are rescaled within 180 positions; the
script prints how far the unscaled model's log-probs are from the scaled ones (the test's
sensitivity). CI (tests/model/test_rope_scaling.sh) builds the same folder and compares
`leap score` with the golden.

    .venv-transformers/bin/python tools/oracle/make_rope_scaling_golden.py
"""
import json
import os
import pathlib
import shutil
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 64}


def logprobs(folder, ids):
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return [float(lp[t - 1, ids[t]]) for t in range(1, len(ids))]


def main():
    src = ROOT / "models" / "tiny-llama3"
    config = json.loads((src / "config.json").read_text())
    ids = [(37 * t + 11) % 2900 + 3 for t in range(180)]
    with tempfile.TemporaryDirectory() as tmp:
        scaled = pathlib.Path(tmp) / "scaled"
        shutil.copytree(src, scaled)
        (scaled / "config.json").write_text(json.dumps(dict(config, rope_scaling=SCALING), indent=2))
        golden = logprobs(str(scaled), ids)
    plain = logprobs(str(src), ids)
    sensitivity = max(abs(a - b) for a, b in zip(golden, plain))
    out = {"rope_scaling": SCALING, "ids": ids, "logprobs": golden,
           "unscaled_max_abs_diff": sensitivity,
           "versions": {"transformers": transformers.__version__, "torch": torch.__version__}}
    path = ROOT / "tests" / "model" / "rope_scaling_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}: {len(golden)} log-probs; the unscaled model differs by up to {sensitivity:.3g}")


if __name__ == "__main__":
    main()
