#!/usr/bin/env python3
"""Dev measurement: would a small BPE tokenizer trained on the suites' CUDA shorten the demo
policy's sequences? Trains byte-level BPE tokenizers (the `tokenizers` trainer, vocab 512 to
4096) on the train tasks' prompts and reference answers of tasks/level1.jsonl and level2.jsonl,
and prints bytes per token on the train and held-out tasks (the byte tokenizer: 1.00).

    .venv-transformers/bin/python tools/oracle/bpe_for_demo.py
"""
import json
import pathlib

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parents[2]


def corpus():
    rows = []
    for name in ("level1.jsonl", "level2.jsonl"):
        for line in (ROOT / "tasks" / name).read_text().splitlines():
            t = json.loads(line)
            rows.append((t["split"], t["prompt"] + "\n" + t["reference"]))
    return [x for s, x in rows if s == "train"], [x for s, x in rows if s != "train"]


def main():
    train, held = corpus()
    for vocab in (512, 1024, 2048, 4096):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|eos|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(train, trainer)
        for split, texts in (("train", train), ("heldout", held)):
            n_bytes = sum(len(x.encode()) for x in texts)
            n_tokens = sum(len(tok.encode(x).ids) for x in texts)
            print(f"vocab {vocab:5d} {split:8s}: {n_bytes / n_tokens:.2f} bytes per token")


if __name__ == "__main__":
    main()
