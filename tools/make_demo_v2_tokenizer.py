#!/usr/bin/env python3
"""Writes models/demo-v2/tokenizer.json and tokenizer_config.json: a byte-level BPE tokenizer
(1024 ids with its special tokens) trained with the `tokenizers` trainer on the train tasks of
tasks/families.jsonl (prompts and reference answers) and the built-in prompt texts, for the demo
policy v2. Deterministic for a given `tokenizers` version (the trainer has no randomness).

    .venv-transformers/bin/python tools/make_demo_v2_tokenizer.py
"""
import json
import pathlib

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPECIALS = ["<|eos|>", "<|pad|>"]


def main():
    texts = []
    for line in (ROOT / "tasks" / "families.jsonl").read_text().splitlines():
        t = json.loads(line)
        if t["split"] == "train":
            texts += [t["prompt"], t["reference"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    out = ROOT / "models" / "demo-v2"
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|eos|>", "pad_token": "<|pad|>",
         "bos_token": None, "clean_up_tokenization_spaces": False}, indent=2) + "\n")
    n_bytes = sum(len(x.encode()) for x in texts)
    n_tok = sum(len(tok.encode(x).ids) for x in texts)
    print(f"{tok.get_vocab_size()} ids; {n_bytes / n_tok:.2f} bytes per token on the training texts")


if __name__ == "__main__":
    main()
