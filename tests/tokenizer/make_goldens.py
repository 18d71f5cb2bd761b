#!/usr/bin/env python3
"""Dev script: trains the two test tokenizers with the `tokenizers` trainer and writes the golden
ids the C++ tests compare against. CI never runs it (the outputs are committed); rerun it only to
change the fixtures, with the pinned version (oracle_common.PINNED):

    python3 -m venv --system-site-packages .venv-oracle
    .venv-oracle/bin/pip install -r tests/tokenizer/requirements-oracle.txt
    .venv-oracle/bin/python tests/tokenizer/make_goldens.py

Fixtures (tests/tokenizer/fixtures/), each a folder as save_pretrained writes it (tokenizer.json
and tokenizer_config.json):
  qwen2_style   NFC, Split(Qwen2's regex) + ByteLevel, merges in the string form "a b",
                specials <|endoftext|> <|im_start|> <|im_end|>, non-special <think> </think>
  llama3_style  NFC, Split(Llama-3's regex) + ByteLevel, merges in the pair form, ignore_merges,
                a TemplateProcessing BOS, specials <|begin_of_text|> <|end_of_text|> <|eot_id|>,
                and added tokens with lstrip / rstrip / single_word / normalized flags
  deepseek_style  no normalizer, DeepSeek-LLM's six Splits + ByteLevel, a BOS template,
                the full-width-bar specials and a non-special FIM token
  gpt2_style    a lone ByteLevel pre-tokenizer with its own GPT-2 regex and add_prefix_space
The training corpus is this repository's own CUDA and C++ sources plus a few lines of other
scripts, so the vocab is code-heavy like the real ones.
"""
import json
import os
import pathlib
import sys

import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from tokenizers import AddedToken, Regex

sys.path.insert(0, os.path.dirname(__file__))
import oracle_common as oc  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
FIX = HERE / "fixtures"
GOLD = HERE / "goldens"

EXTRA = ["你好，世界。这是中文文本。", "日本語のテキストです。", "한국어 텍스트", "Ünïcödé naïve café Straße",
         "emoji 😀👍🏽🇫🇷 ✅", "digits 0123456789 3.14159 1,000,000"] * 50

GOLDEN_TEXTS = [
    "", " ", "a", "Hello, world!", "  leading and trailing  ", "don't I'LL we've THEY'RE it's",
    "__global__ void add(const float* __restrict__ a, float* b, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) b[i] += a[i];\n}\n",
    "\t\tif (x) {\r\n\t\t\treturn;\r\n\t\t}", " " * 40 + "x", "\n" * 7, " \n \n  \n", "a" * 300,
    "1234567890", "3.14159e-10", "x = 1000000;", "你好，世界", "日本語のテキスト", "한국어",
    "😀👍🏽👨‍👩‍👧🇫🇷", "e\u0301 versus \u00e9", "A\u030a\u212b", "\u180e\u200b\u0085\u00a0\u3000\u2028",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>\nhmm</think>answer",
    "<|endoftext|><|endoftext|>", "x<|im_end|>y", "<|im_en", "<|begin_of_text|>Hello<|eot_id|>",
    "a <sep> b", "word<sep>word", "  <sep>  ", "<|end_of_text|>", "==========", "------>",
    "\U0001F600" * 5, "ǅ ǈ ǋ ǲ", "ⅷ ⅸ 〇", "\U0001D7D8\U0001D7D9", "x\u0301\u0301\u0301",
]


def corpus():
    texts = []
    for pattern in ("cuda/**/*.cu", "cuda/**/*.cuh", "src/**/*.cpp", "src/**/*.h", "tests/**/*.py"):
        for p in sorted(ROOT.glob(pattern)):
            if "fixtures" in p.parts:
                continue
            texts.append(p.read_text(encoding="utf-8", errors="replace"))
    return texts + EXTRA


def save_folder(tok, name, config, merges_as_strings):
    folder = FIX / name
    folder.mkdir(parents=True, exist_ok=True)
    data = json.loads(tok.to_str())
    if merges_as_strings:
        data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]]
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False, indent=None) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return Tokenizer.from_file(str(folder / "tokenizer.json"))


def train(regex, specials, vocab_size, splits=None, nfc=True):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFC()] if nfc else [])
    splits = splits or [regex]
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in splits] +
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer=trainer)
    return tok


def make_qwen2_style():
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train(oc.QWEN2_REGEX, specials, 3000)
    tok.add_tokens([AddedToken("<think>", special=False, normalized=False),
                    AddedToken("</think>", special=False, normalized=False)])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    cfg = {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
           "bos_token": None}
    return save_folder(tok, "qwen2_style", cfg, merges_as_strings=True)


def make_llama3_style():
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok = train(oc.LLAMA3_REGEX, specials, 3000)
    tok.add_tokens([AddedToken("<sep>", special=False, lstrip=True, rstrip=True, normalized=False),
                    AddedToken("word", special=False, single_word=True, normalized=False),
                    AddedToken("Å", special=False, normalized=True)])
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                      special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])])
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    tok = Tokenizer.from_str(json.dumps(data))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
           "eos_token": {"content": "<|eot_id|>", "special": True}, "pad_token": None}
    return save_folder(tok, "llama3_style", cfg, merges_as_strings=False)


DEEPSEEK_SPLITS = oc.DEEPSEEK_SPLITS
DEEPSEEK_BOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
DEEPSEEK_EOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"


def make_deepseek_style():
    tok = train(None, [DEEPSEEK_BOS, DEEPSEEK_EOS], 3000, splits=DEEPSEEK_SPLITS, nfc=False)
    tok.add_tokens([AddedToken("<\uff5cfim\u2581hole\uff5c>", special=False, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{DEEPSEEK_BOS} $A", pair=f"{DEEPSEEK_BOS} $A $B",
        special_tokens=[(DEEPSEEK_BOS, tok.token_to_id(DEEPSEEK_BOS))])
    cfg = {"tokenizer_class": "LlamaTokenizerFast", "bos_token": DEEPSEEK_BOS, "eos_token": DEEPSEEK_EOS}
    return save_folder(tok, "deepseek_style", cfg, merges_as_strings=True)


def make_gpt2_style():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer=trainer)
    cfg = {"eos_token": "<|endoftext|>"}
    return save_folder(tok, "gpt2_style", cfg, merges_as_strings=False)


def main():
    versions = {"tokenizers": tokenizers.__version__}
    if versions["tokenizers"] != oc.PINNED["tokenizers"]:
        print(f"warning: tokenizers {versions['tokenizers']} is not the pinned {oc.PINNED['tokenizers']}")
    GOLD.mkdir(exist_ok=True)
    for name, make, added in (("qwen2_style", make_qwen2_style, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]),
                              ("llama3_style", make_llama3_style, ["<|begin_of_text|>", "<|eot_id|>", "<sep>", "word", "Å"]),
                              ("gpt2_style", make_gpt2_style, ["<|endoftext|>"]),
                              ("deepseek_style", make_deepseek_style, [DEEPSEEK_BOS, DEEPSEEK_EOS, "<\uff5cfim\u2581hole\uff5c>"])):
        tok = make()
        texts = GOLDEN_TEXTS + oc.random_texts(seed=1234, n=300, added=added)
        oc.write_cases(GOLD / f"{name}.json", f"tests/tokenizer/fixtures/{name}", tok, texts, versions)
        print(f"{name}: vocab {tok.get_vocab_size()}, {len(texts)} golden texts")


if __name__ == "__main__":
    main()
