#!/usr/bin/env python3
"""LEAP's tokenizer beside Hugging Face's `tokenizers` (Rust), one thread each, same corpus, same
tokenizer.json. The corpus is this repository's CUDA and C++ sources plus generated multilingual
text (CJK, emoji, long whitespace and digit runs), as a list of documents. Both sides get a
warm-up pass and report the best of N timed passes; the token counts must agree.

    cmake --build build --target bench_tokenizer tokenizer_compare
    (cd build && ctest -R tokenizer_real_unpack)   # unpacks the real Qwen2 and Llama-3 files
    .venv-oracle/bin/python benchmarks/bench_tokenizer.py [--repeats 5] [--tokenizer DIR ...]
"""
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before the package starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def corpus():
    docs = []
    for pattern in ("cuda/**/*.cu", "cuda/**/*.cuh", "src/**/*.cpp", "src/**/*.h"):
        docs += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(ROOT.glob(pattern))]
    rng = random.Random(7)
    pieces = ["你好，世界。", "日本語のテキスト、", "한국어 문장 ", "naïve café ", "😀👍🏽 ", " " * 33, "\t\t\n",
              "1234567890", "Straße über ", "x = y + 1;\n"]
    for _ in range(200):
        docs.append("".join(rng.choice(pieces) for _ in range(200)))
    return docs


def time_hf(path, docs, repeats):
    tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tok.encode_special_tokens = True
    tokens = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        tok.encode_batch(docs, add_special_tokens=False)
        best = min(best, time.perf_counter() - t0)
    return tokens, best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bench", default=str(ROOT / "build/benchmarks/bench_tokenizer"))
    real = ROOT / "build/tokenizer_fixtures"  # the real vocabularies, unpacked by ctest's tokenizer_real_unpack
    ap.add_argument("--tokenizer", nargs="*", default=[str(real / "qwen2_real"), str(real / "llama3_real"),
                                                       str(ROOT / "tests/tokenizer/fixtures/qwen2_style"),
                                                       str(ROOT / "tests/tokenizer/fixtures/llama3_style"),
                                                       str(ROOT / "tests/tokenizer/fixtures/deepseek_style")])
    a = ap.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # both sides on the same one core
    docs = corpus()
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(docs, f)
        corpus_path = f.name
    print(f"corpus: {len(docs)} documents, {nbytes / 1e6:.2f} MB; tokenizers {tokenizers.__version__}, one thread")
    print(f"{'tokenizer':<14} {'tokens':>9} {'HF MB/s':>9} {'LEAP MB/s':>10} {'LEAP/HF':>8}")
    ok = True
    for path in a.tokenizer:
        tokens, hf_s = time_hf(path, docs, a.repeats)
        out = subprocess.run([a.bench, path, corpus_path, str(a.repeats)],
                             check=True, capture_output=True, text=True).stdout
        leap = json.loads(out)
        if leap["tokens"] != tokens:
            print(f"token counts differ: HF {tokens}, LEAP {leap['tokens']}")
            ok = False
        hf_mbs = nbytes / hf_s / 1e6
        print(f"{pathlib.Path(path).name:<14} {tokens:>9} {hf_mbs:>9.2f} {leap['mb_per_s']:>10.2f} "
              f"{leap['mb_per_s'] / hf_mbs:>7.2f}x")
    os.unlink(corpus_path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
