#!/usr/bin/env python3
"""Writes a golden-format file (oracle_common.write_cases) of fresh cases for the differential
test, with the ids of the installed `tokenizers` package:

  diff_cases.py random  FIXTURE_DIR OUT.json --n 10000 --seed S   random texts (oracle_common)
  diff_cases.py unicode FIXTURE_DIR OUT.json [--lo 0 --hi 0x110000] every code point in a few
        contexts (" XaX1X\\n" for each X), 128 code points a case: a case that fails holds a
        character the two regex engines or Unicode tables classify differently.
"""
import argparse
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
import oracle_common as oc  # noqa: E402


def added_strings(tok):
    return [t.content for t in tok.get_added_tokens_decoder().values()]


def unicode_texts(lo, hi, per_case=128):
    texts, cur = [], []
    for cp in range(lo, hi):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        cur.append(f" {c}a{c}1{c}\n")
        if len(cur) == per_case:
            texts.append("".join(cur))
            cur = []
    if cur:
        texts.append("".join(cur))
    return texts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["random", "unicode"])
    ap.add_argument("fixture")
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lo", type=lambda s: int(s, 0), default=0)
    ap.add_argument("--hi", type=lambda s: int(s, 0), default=0x110000)
    ap.add_argument("--per-case", type=int, default=128)
    a = ap.parse_args()
    tok = Tokenizer.from_file(os.path.join(a.fixture, "tokenizer.json"))
    if a.mode == "random":
        texts = oc.random_texts(a.seed, a.n, added_strings(tok))
    else:
        texts = unicode_texts(a.lo, a.hi, a.per_case)
    oc.write_cases(a.out, a.fixture, tok, texts, {"tokenizers": tokenizers.__version__})


if __name__ == "__main__":
    main()
