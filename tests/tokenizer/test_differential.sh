#!/usr/bin/env bash
# Randomised differential test: 10,000 fresh random texts per fixture (code, whitespace runs,
# digits, CJK, emoji, random code points, added-token strings), ids from the installed
# `tokenizers` package against LEAP's. Needs the oracle's Python (LEAP_ORACLE_PYTHON, else
# .venv-oracle/bin/python in the source tree); without `tokenizers` it exits 77 (skipped).
# The seed is printed; LEAP_DIFF_SEED=S reruns the same texts.
set -euo pipefail
src="${LEAP_SOURCE_DIR:?}"
compare="${TOKENIZER_COMPARE:?}"
py="${LEAP_ORACLE_PYTHON:-$src/.venv-oracle/bin/python}"
if [ ! -x "$py" ] || ! "$py" -c "import tokenizers" 2>/dev/null; then
  echo "SKIPPED: no Python with the tokenizers package (make .venv-oracle as tests/tokenizer/make_goldens.py says)"
  exit 77
fi
seed="${LEAP_DIFF_SEED:-$(date +%s)}"
n="${LEAP_DIFF_N:-10000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "seed $seed, $n texts per fixture, tokenizers $("$py" -c 'import tokenizers; print(tokenizers.__version__)')"
status=0
dirs=()
for fx in qwen2_style llama3_style deepseek_style gpt2_style; do dirs+=("$src/tests/tokenizer/fixtures/$fx"); done
# The real models' files, when unpacked (the tokenizer_real ctest fixture).
for fx in qwen2_real llama3_real deepseek_coder_real; do
  [ -f "${LEAP_REAL_TOKENIZERS:-/nonexistent}/$fx/tokenizer.json" ] && dirs+=("$LEAP_REAL_TOKENIZERS/$fx")
done
for dir in "${dirs[@]}"; do
  fx="$(basename "$dir")"
  "$py" "$src/tests/tokenizer/diff_cases.py" random "$dir" "$tmp/$fx.json" --n "$n" --seed "$seed"
  echo "== $fx"
  "$compare" "$tmp/$fx.json" "$dir" || status=1
done
exit $status
