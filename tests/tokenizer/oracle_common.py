"""Shared by the tokenizer dev scripts: the pinned oracle, the golden-file format, the random
text generator. The oracle is the `tokenizers` package: ids are those of
Tokenizer.from_file(...).encode(text, add_special_tokens=False), with encode_special_tokens True
("plain": special-token strings are text) and False ("special": they are their ids)."""
import json
import random

PINNED = {"tokenizers": "0.23.3"}  # the version the committed goldens were made with

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# DeepSeek-LLM's pre-tokenizer: six Splits (newlines, letters of many scripts with an optional
# leading space, ASCII and full-width punctuation, trailing whitespace, CJK/Hangul runs, digit
# runs) before ByteLevel, and an empty normalizer Sequence (llama.cpp's DEEPSEEK_LLM list). The
# synthetic deepseek_style fixture uses it, for its explicit letter classes.
DEEPSEEK_SPLITS = [
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌῐ-\u1fd3ῖ-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
]


# DeepSeek-Coder's (llama.cpp's DEEPSEEK_CODER list, whose last entry \p{N} is the model's
# Digits(individual_digits) step): four Splits, then each digit its own piece, then ByteLevel.
DEEPSEEK_CODER_PRE = [
    {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
    for r in ["[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+"]
] + [{"type": "Digits", "individual_digits": True}]


def encode_both(tok, text):
    tok.encode_special_tokens = True
    plain = tok.encode(text, add_special_tokens=False).ids
    tok.encode_special_tokens = False
    special = tok.encode(text, add_special_tokens=False).ids
    return plain, special


def write_cases(path, tokenizer_rel, tok, texts, versions):
    cases = []
    for t in texts:
        plain, special = encode_both(tok, t)
        cases.append({"text": t, "plain": plain, "special": special})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"tokenizer": tokenizer_rel, "versions": versions, "cases": cases}, f,
                  ensure_ascii=True, separators=(",", ":"))
        f.write("\n")


_WS = [" ", "  ", "    ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028",
       "\u0085", "\u180e", "\u200b", "\u000b", "\u000c", " " * 17, "\t\t\t"]
_CODE = ["__global__ void k(float* x, int n) {", "int i = blockIdx.x * blockDim.x + threadIdx.x;",
         "if (i < n) x[i] *= 2.0f;", "}", "#include <cuda_runtime.h>", "__shared__ float s[256];",
         "for (int k = 0; k < 32; ++k)", "x<<<grid, block>>>(d, n);", "return;", "// TODO: it's", "/* C */",
         "std::vector<int> v{1,2,3};", "a->b", "a::b", "i++", "x != y", "0x1F", "1e-5f", "3.14159"]
_WORDS = ["the", "The", "HELLO", "don't", "I'LL", "we've", "naïve", "café", "Straße", "über", "ÉCOLE"]
_CJK = ["你好", "世界", "漢字", "日本語のテキスト", "한국어", "ｶﾀｶﾅ", "中文，标点。"]
_EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🤖", "🧪", "✅"]
_COMBINING = ["e\u0301", "a\u0308", "\u1100\u1161", "n\u0303", "A\u030a", "\u0915\u093f"]
_DIGITS = ["0", "12", "123", "1234", "12345678901234567890", "3.5", "1,000", "٣٤٥", "①②"]


def random_codepoint(rng):
    while True:
        plane = rng.random()
        if plane < 0.6:
            cp = rng.randrange(0x20, 0x3000)
        elif plane < 0.9:
            cp = rng.randrange(0x3000, 0x10000)
        else:
            cp = rng.randrange(0x10000, 0x110000)
        if not (0xD800 <= cp <= 0xDFFF):
            return chr(cp)


def random_text(rng, added):
    """One random string: a mix of code, words, whitespace runs, digits, CJK, emoji, combining
    sequences, random code points and added-token strings (whole, cut or glued to text)."""
    parts = []
    for _ in range(rng.randrange(1, 14)):
        r = rng.random()
        if r < 0.18:
            parts.append(rng.choice(_CODE))
        elif r < 0.33:
            parts.append(rng.choice(_WS))
        elif r < 0.43:
            parts.append(rng.choice(_WORDS))
        elif r < 0.50:
            parts.append(rng.choice(_DIGITS))
        elif r < 0.57:
            parts.append(rng.choice(_CJK))
        elif r < 0.63:
            parts.append(rng.choice(_EMOJI))
        elif r < 0.68:
            parts.append(rng.choice(_COMBINING))
        elif r < 0.80:
            parts.append("".join(random_codepoint(rng) for _ in range(rng.randrange(1, 6))))
        elif r < 0.92 and added:
            tok = rng.choice(added)
            if rng.random() < 0.2 and len(tok) > 1:
                tok = tok[: rng.randrange(1, len(tok))]
            parts.append(tok)
        else:
            parts.append("".join(rng.choice(" \t\n'sdtmlvre0123456789.,;:!?-_=+*/\\\"<>|{}[]()") for _ in range(rng.randrange(1, 8))))
    return "".join(parts)


def random_texts(seed, n, added):
    rng = random.Random(seed)
    return [random_text(rng, added) for _ in range(n)]
