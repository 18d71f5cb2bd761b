#!/usr/bin/env python3
"""Rewrites a Hugging Face model folder's weights in bf16, in place (config.json's torch_dtype too).

For a policy trained before `sft.save_dtype = bf16` existed; new SFT runs write bf16 themselves.
Uses transformers (tools/oracle's venv), so the file is what transformers itself writes:
    .venv-transformers/bin/python tools/to_bf16.py models/demo-v2
"""
import sys

import torch
from transformers import AutoModelForCausalLM


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    folder = argv[0]
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    print(f"{folder}: weights written in bf16")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
