#!/usr/bin/env bash
# Unpacks the real models' tokenizer.json.xz fixtures (Qwen2, Llama-3, DeepSeek-Coder) (tests/tokenizer/fixtures/*_real, rebuilt
# by gguf_to_tokenizer_json.py) into OUT/NAME/ as save_pretrained folders. A ctest fixture.
set -euo pipefail
src="${1:?source dir}"; out="${2:?output dir}"
for d in "$src"/tests/tokenizer/fixtures/*_real; do
  name="$(basename "$d")"
  mkdir -p "$out/$name"
  xz -dc "$d/tokenizer.json.xz" > "$out/$name/tokenizer.json"
  cp "$d/tokenizer_config.json" "$out/$name/"
done
