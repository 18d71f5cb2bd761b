#!/usr/bin/env python3
"""Dev script: builds two tiny, randomly initialised fp32 Hugging Face model folders with
transformers itself, so that LEAP's loader, tokenizer and forward pass can be checked against the
reference implementation (tools/oracle/check_transformers_logprobs.py) on folders laid out exactly
as `save_pretrained` writes them:

  models/tiny-qwen2/   Qwen2ForCausalLM, tokenizer tests/tokenizer/fixtures/qwen2_style, the
                       Qwen2.5-Instruct chat template, untied embeddings, vocab padded to 3072
  models/tiny-llama3/  LlamaForCausalLM, tokenizer tests/tokenizer/fixtures/llama3_style, the
                       Llama-3.1-Instruct chat template, tied embeddings, eos_token_id a list,
                       vocab padded to a multiple of 64

Run from anywhere with the transformers venv (tools/oracle/requirements-transformers.txt):

    .venv-transformers/bin/python tools/oracle/make_tiny_hf_models.py [--out models]

Every parameter is redrawn from a fixed-seed generator (randomise()), so the folders are
byte-identical on each run with the same versions. The draw differs from transformers' own init
(N(0, 0.02^2), zero biases, unit norm weights) on purpose: the weights are wider, so attention is
not near-uniform, and the norm weights and biases are random, so a loader that drops them shows.
"""
import argparse
import json
import pathlib
import shutil
import tempfile
import textwrap

import tokenizers
import torch
import transformers
from transformers import (AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "tokenizer" / "fixtures"
TEMPLATES = ROOT / "tests" / "chat" / "templates"

SEED = 20261201
INIT_STD = 0.15        # std of the linear and embedding weights (transformers' default is 0.02)
NORM_JITTER = 0.2      # RMSNorm weights are 1 + NORM_JITTER * N(0, 1)
BIAS_STD = 0.1         # attention biases (Qwen2's q/k/v) are BIAS_STD * N(0, 1)

# The sizes both models share.
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
            hidden_act="silu", initializer_range=INIT_STD, torch_dtype="float32")


def chat_template(name):
    return json.loads((TEMPLATES / name / "tokenizer_config.json").read_text())["chat_template"]


def fixture_for_tokenizers_019(fixture, tmp):
    """Returns a folder with the fixture that tokenizers 0.19 (the newest transformers 4.44
    accepts) can read. Fixtures written by tokenizers >= 0.20 may store BPE merges as pairs
    ["a", "b"], which 0.19 rejects ("data did not match any variant of untagged enum
    ModelWrapper"); they are rewritten in the older string form "a b", which means the same as
    long as no merged piece contains a space (byte-level pieces never do: a space is "Ġ")."""
    src = FIXTURES / fixture
    data = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    merges = data["model"].get("merges", [])
    if not merges or isinstance(merges[0], str):
        return src
    assert all(" " not in a and " " not in b for a, b in merges), "merge with a space"
    data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    dst = pathlib.Path(tmp) / fixture
    dst.mkdir()
    (dst / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    shutil.copy(src / "tokenizer_config.json", dst / "tokenizer_config.json")
    return dst


def load_tokenizer(fixture, template, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        # clean_up_tokenization_spaces: real Qwen2.5 and Llama-3 folders say False; 4.44's
        # default (True) would alter decoded text.
        tok = AutoTokenizer.from_pretrained(str(fixture_for_tokenizers_019(fixture, tmp)),
                                            clean_up_tokenization_spaces=False, **kwargs)
    tok.chat_template = template
    return tok


def token_id(tok, text):
    ids = tok.convert_tokens_to_ids([text])
    assert ids[0] is not None and tok.convert_ids_to_tokens(ids)[0] == text, text
    return ids[0]


def padded(n, multiple):
    return (n + multiple - 1) // multiple * multiple


def randomise(model, seed):
    """Draws every parameter from a fixed-seed generator, so the result depends on no global RNG
    state and on nothing transformers' own init does."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + NORM_JITTER * noise)
            elif name.endswith(".bias"):
                p.copy_(BIAS_STD * noise)
            else:
                p.copy_(INIT_STD * noise)


def save(model, tok, gen_config, out, readme):
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():
        if stale.is_file():
            stale.unlink()
    model.generation_config = gen_config
    model.save_pretrained(str(out), safe_serialization=True)
    # legacy_format=False: tokenizer.json only (no vocab.json / merges.txt copies), as the
    # Llama-3 repos ship it; keeps the folder under 2 MB.
    tok.save_pretrained(str(out), legacy_format=False)
    paragraphs = readme.strip().split("\n\n")
    (out / "README.md").write_text(paragraphs[0] + "\n\n" + "\n\n".join(
        textwrap.fill(" ".join(p.split()), width=96) for p in paragraphs[1:]) + "\n")
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {size / 1e6:.2f} MB, files: {', '.join(sorted(f.name for f in out.iterdir()))}")


README = """# {name}

A tiny {arch} with RANDOM weights (fixed seed {seed}): a test fixture for LEAP's Hugging Face
loader, tokenizer and chat template, not a language model.

{details}

Weights: linear and embedding N(0, {std}^2), RMSNorm weights 1 + {jit} N(0, 1), biases {bstd} N(0, 1)
(larger than transformers' own init, so attention is not near-uniform and dropped norm weights or
biases show in the log-probs). tokenizer.json is written by tokenizers {tk}, which stores BPE
merges in the string form "a b"; the ids are those of the fixture (its goldens in
tests/tokenizer/goldens/ reproduce).

Made by `tools/oracle/make_tiny_hf_models.py` with transformers {tf} and torch {torch}
(`save_pretrained(safe_serialization=True)` for the model, the tokenizer's own `save_pretrained`
for tokenizer.json / tokenizer_config.json). `tools/oracle/check_transformers_logprobs.py
--model models/{name}` compares LEAP's log-probs with transformers' on it.
"""


WEIGHTS = dict(std=INIT_STD, jit=NORM_JITTER, bstd=BIAS_STD, tk=tokenizers.__version__)


def make_qwen2(out):
    tok = load_tokenizer("qwen2_style", chat_template("qwen2.5-instruct"),
                         eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
                         model_max_length=4096)
    endoftext, im_end = token_id(tok, "<|endoftext|>"), token_id(tok, "<|im_end|>")
    n_ids = len(tok)  # base vocab + added tokens
    vocab = padded(n_ids, 128)  # 3002 ids -> 3072
    cfg = Qwen2Config(vocab_size=vocab, rope_theta=1e6, tie_word_embeddings=False,
                      use_sliding_window=False, sliding_window=4096, max_window_layers=2,
                      bos_token_id=endoftext, eos_token_id=im_end, **TINY)
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(cfg).to(torch.float32).eval()
    randomise(model, SEED)
    gen = GenerationConfig(bos_token_id=endoftext, pad_token_id=endoftext,
                           eos_token_id=[im_end, endoftext])
    details = (f"Tokenizer: tests/tokenizer/fixtures/qwen2_style ({n_ids} ids; config vocab_size "
               f"{vocab}, padded), chat template: Qwen2.5-Instruct, eos <|im_end|> ({im_end}), pad "
               f"<|endoftext|> ({endoftext}). Hidden 64, 2 layers, 4 query heads on 2 KV heads, "
               f"SwiGLU 128, q/k/v biases, untied embeddings, rope_theta 1e6.")
    save(model, tok, gen, out, README.format(name=out.name, arch="Qwen2ForCausalLM", seed=SEED,
                                             details=details, tf=transformers.__version__,
                                             torch=torch.__version__, **WEIGHTS))


def make_llama3(out):
    tok = load_tokenizer("llama3_style", chat_template("llama-3.1-instruct"),
                         bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                         model_max_length=4096)
    bos, eot, eos = (token_id(tok, t) for t in ("<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>"))
    n_ids = len(tok)
    vocab = padded(n_ids, 64)
    cfg = LlamaConfig(vocab_size=vocab, rope_theta=500000.0, tie_word_embeddings=True,
                      attention_bias=False, mlp_bias=False, bos_token_id=bos,
                      eos_token_id=[eos, eot], **TINY)
    torch.manual_seed(SEED + 1)
    model = LlamaForCausalLM(cfg).to(torch.float32).eval()
    randomise(model, SEED + 1)
    gen = GenerationConfig(bos_token_id=bos, eos_token_id=[eos, eot])
    details = (f"Tokenizer: tests/tokenizer/fixtures/llama3_style ({n_ids} ids; config vocab_size "
               f"{vocab}, padded to a multiple of 64), chat template: Llama-3.1-Instruct, bos "
               f"<|begin_of_text|> ({bos}), eos <|eot_id|> ({eot}); config eos_token_id is the "
               f"list [{eos}, {eot}] as in Llama-3.1. Hidden 64, 2 layers, 4 query heads on 2 KV "
               f"heads, SwiGLU 128, tied embeddings, rope_theta 5e5. The fixture tokenizer has no "
               f"<|start_header_id|> / <|end_header_id|> tokens: the template's headers are "
               f"encoded as ordinary text.")
    save(model, tok, gen, out, README.format(name=out.name, arch="LlamaForCausalLM", seed=SEED + 1,
                                             details=details, tf=transformers.__version__,
                                             torch=torch.__version__, **WEIGHTS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "models"), help="parent folder (default: models/)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    make_qwen2(out / "tiny-qwen2")
    make_llama3(out / "tiny-llama3")


if __name__ == "__main__":
    main()
