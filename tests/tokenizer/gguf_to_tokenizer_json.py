#!/usr/bin/env python3
"""Dev script: rebuilds a real model's tokenizer.json from a llama.cpp vocab-only GGUF (the real
vocab and merges, as llama.cpp's converter copied them from the model's tokenizer.json) and checks
it against the ids Hugging Face gave for llama.cpp's test texts (the .gguf.inp/.gguf.out pair, made
with `tokenizer.encode(text, add_special_tokens=False)` on the original file).

The GGUFs come from the llama-cpp-python sdist, which vendors llama.cpp's models/ folder:
    pip download llama-cpp-python==0.3.2 --no-deps --no-binary :all: --no-build-isolation -d DL
    (needs scikit-build-core in the venv) and untar it; gguf-py is in vendor/llama.cpp/gguf-py.

    PYTHONPATH=.../vendor/llama.cpp/gguf-py .venv-oracle/bin/python \\
        tests/tokenizer/gguf_to_tokenizer_json.py .../models/ggml-vocab-qwen2.gguf qwen2 OUT_DIR

Writes OUT_DIR/tokenizer.json.xz, tokenizer_config.json and OUT_DIR/../../goldens/NAME.json
(llama.cpp's texts with their real HF ids, plus random texts with ids from the rebuilt file).
What is rebuilt rather than copied: the JSON around the vocab, the pre-tokenizer (the family's
published regex), the normalizer and the added tokens' flags (specials: not normalized, no
strip), so the goldens check the real vocab and merges, not those settings.
"""
import json
import lzma
import os
import pathlib
import sys
import types

# gguf-py imports sentencepiece for converters this script does not use.
sys.modules.setdefault("sentencepiece", types.SimpleNamespace(SentencePieceProcessor=None))
import gguf  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import oracle_common as oc  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent

FAMILIES = {
    "qwen2": {"regex": oc.QWEN2_REGEX, "normalizer": {"type": "NFC"}, "ignore_merges": False, "bos": False},
    "llama-bpe": {"regex": oc.LLAMA3_REGEX, "normalizer": None, "ignore_merges": True, "bos": True},
    "deepseek-coder": {"steps": oc.DEEPSEEK_CODER_PRE, "normalizer": {"type": "Sequence", "normalizers": []},
                       "ignore_merges": False, "bos": True},
}


def field(reader, key):
    f = reader.fields[key]
    if len(f.data) == 1 and f.types[0] != gguf.GGUFValueType.ARRAY:
        v = f.parts[f.data[0]]
        return bytes(v).decode("utf-8") if f.types[0] == gguf.GGUFValueType.STRING else int(v[0])
    if f.types[-1] == gguf.GGUFValueType.STRING:
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
    return [int(f.parts[i][0]) for i in f.data]


def main():
    path, family, out_dir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    fam = FAMILIES[family]
    r = gguf.GGUFReader(path)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = field(r, "tokenizer.ggml.merges")
    bos = field(r, "tokenizer.ggml.bos_token_id")
    eos = field(r, "tokenizer.ggml.eos_token_id")
    vocab, added = {}, []
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty in (3, 4):  # control / user-defined: added tokens
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": ty == 3})
        elif ty == 1:
            vocab[t] = i
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    post = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    if fam["bos"]:
        b = tokens[bos]
        post = {"type": "Sequence", "processors": [post, {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": b, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": b, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": b, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {b: {"id": b, "ids": [bos], "tokens": [b]}}}]}
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
          "normalizer": fam["normalizer"],
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": fam.get("steps", [
              {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
              for r in fam.get("splits", [fam.get("regex")])]) + [byte_level]},
          "post_processor": post, "decoder": byte_level,
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                    "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                    "ignore_merges": fam["ignore_merges"], "vocab": vocab, "merges": merges}}
    text = json.dumps(tj, ensure_ascii=False)
    tok = Tokenizer.from_str(text)

    # Each text is followed by a separator line; each .out line is one text's ids.
    inp = pathlib.Path(path + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")[:-1]
    outs = [[int(x) for x in line.split()] for line in pathlib.Path(path + ".out").read_text().split("\n")[:len(inp)]]
    assert len(inp) == len(outs), (len(inp), len(outs))
    bad = [(t, o) for t, o in zip(inp, outs) if tok.encode(t, add_special_tokens=False).ids != o]
    for t, o in bad[:5]:
        print("rebuilt file disagrees with llama.cpp's HF ids:", repr(t), o, tok.encode(t, add_special_tokens=False).ids)
    if bad:
        sys.exit(f"{len(bad)} of {len(inp)} reference texts differ: not writing")

    out_dir.mkdir(parents=True, exist_ok=True)
    with lzma.open(out_dir / "tokenizer.json.xz", "wt", encoding="utf-8", preset=9) as f:
        f.write(text)
    cfg = {"bos_token": tokens[bos], "eos_token": tokens[eos]}
    (out_dir / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False, indent=2) + "\n")
    name = out_dir.name
    texts = inp + oc.random_texts(seed=99, n=300, added=[a["content"] for a in added[:8]])
    # The golden's tokenizer folder is where the test unpacks the .xz (see CMakeLists.txt).
    oc.write_cases(HERE / "goldens" / f"{name}.json", f"tokenizer_fixtures/{name}", tok, texts,
                   {"tokenizers": tokenizers.__version__, "reference": os.path.basename(path) + ".out"})
    print(f"{name}: {len(vocab)} vocab, {len(merges)} merges, {len(added)} added; {len(inp)} reference texts "
          f"agree with HF; {len(texts)} golden texts")


if __name__ == "__main__":
    main()
