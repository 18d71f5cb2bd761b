#!/usr/bin/env bash
# `leap tokenize` as a user runs it: ids as JSON in both special-token modes, --decode back to
# the text, --add-special-tokens, and exit 2 naming the file and field for bad input.
set -euo pipefail
leap="${LEAP:?}"
src="${LEAP_SOURCE_DIR:?}"
fx="$src/tests/tokenizer/fixtures/qwen2_style"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'hi<|im_end|>\n<think>ok</think>' > "$tmp/in.txt"
"$leap" tokenize --tokenizer "$fx" --input "$tmp/in.txt" > "$tmp/plain.json"
"$leap" tokenize --tokenizer "$fx" --input "$tmp/in.txt" --parse-special > "$tmp/special.json"
im_end=$(python3 -c "import json;d=json.load(open('$fx/tokenizer.json'));print([t['id'] for t in d['added_tokens'] if t['content']=='<|im_end|>'][0])")
think=$(python3 -c "import json;d=json.load(open('$fx/tokenizer.json'));print([t['id'] for t in d['added_tokens'] if t['content']=='<think>'][0])")
python3 - "$tmp/plain.json" "$tmp/special.json" "$im_end" "$think" <<'PY' || fail "special-token modes"
import json, sys
plain = json.load(open(sys.argv[1]))["ids"]; special = json.load(open(sys.argv[2]))["ids"]
im_end, think = int(sys.argv[3]), int(sys.argv[4])
assert im_end not in plain, plain          # safe mode: the special string is text
assert im_end in special, special          # --parse-special: it is its id
assert think in plain and think in special  # non-special added tokens match in both modes
PY
"$leap" tokenize --tokenizer "$fx" --decode "$tmp/plain.json" > "$tmp/back.txt"
cmp -s "$tmp/in.txt" "$tmp/back.txt" || fail "decode(encode(text)) != text"
"$leap" tokenize --tokenizer "$src/tests/tokenizer/fixtures/llama3_style" --input "$tmp/in.txt" \
  --add-special-tokens | grep -q '^{"ids": \[0, ' || fail "--add-special-tokens adds no BOS"

# Bad input: exit 2, naming the file and the field.
expect_2() {
  local what="$1" pattern="$2"; shift 2
  set +e; "$leap" tokenize "$@" > /dev/null 2> "$tmp/err"; rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2"
  grep -q -- "$pattern" "$tmp/err" || fail "$what: message lacks '$pattern': $(cat "$tmp/err")"
}
echo '{"ids": [1, "x"]}' > "$tmp/bad_ids.json"
expect_2 "bad ids" "bad_ids.json: field 'ids\[1\]'" --tokenizer "$fx" --decode "$tmp/bad_ids.json"
mkdir "$tmp/tok"
python3 -c "
import json; d = json.load(open('$fx/tokenizer.json')); d['normalizer'] = {'type': 'Lowercase'}
json.dump(d, open('$tmp/tok/tokenizer.json', 'w'))"
expect_2 "unsupported normalizer" "tokenizer.json: field 'normalizer.type': unsupported normalizer 'Lowercase'" \
  --tokenizer "$tmp/tok" --input "$tmp/in.txt"
echo '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}}' > "$tmp/tok/tokenizer.json"
expect_2 "bad merge" "field 'model.merges\[0\]'" --tokenizer "$tmp/tok" --input "$tmp/in.txt"
expect_2 "no tokenizer.json" "no tokenizer.json" --tokenizer "$tmp" --input "$tmp/in.txt"
echo "cli_tokenize: all checks passed"
