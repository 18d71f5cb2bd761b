#!/usr/bin/env python3
"""Dev script: the parameter counts of the committed config.json fixtures, counted by transformers,
for the `leap plan` CI test (tests/cli/test_plan_cli.sh compares its "parameters" with them).

transformers builds each model from its config.json with 1 and with 2 decoder layers (the full
7B would not fit this machine's memory in fp32); every decoder layer has the same tensors, so
the full count is P(1) + (L - 1) * (P(2) - P(1)). Writes tests/cli/plan_param_golden.json.

    .venv-transformers/bin/python tools/oracle/make_plan_param_golden.py
"""
import json
import os
import pathlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ["models/qwen2.5-coder-1.5b", "models/qwen2.5-coder-7b", "models/demo", "models/demo-v2"]


def count(folder, layers):
    cfg = AutoConfig.from_pretrained(ROOT / folder)
    cfg.num_hidden_layers = layers
    torch.manual_seed(0)
    # bf16 halves the memory of the two big embedding matrices; only shapes are counted.
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    return sum(p.numel() for p in model.parameters()), AutoConfig.from_pretrained(ROOT / folder).num_hidden_layers


def main():
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "parameters": {}}
    for folder in FOLDERS:
        p1, layers = count(folder, 1)
        p2, _ = count(folder, 2)
        out["parameters"][folder] = p1 + (layers - 1) * (p2 - p1)
        print(folder, out["parameters"][folder])
    path = ROOT / "tests" / "cli" / "plan_param_golden.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print("wrote", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
