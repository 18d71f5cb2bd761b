#!/usr/bin/env bash
# Llama-3.1's RoPE scaling (rope_type "llama3") against transformers: models/tiny-llama3 with the
# golden's rope_scaling block in its config.json must give transformers' log-probs (committed in
# rope_scaling_golden.json by tools/oracle/make_rope_scaling_golden.py) to 1e-4, and the same
# folder without the block must not (so the comparison can fail).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
golden="$here/rope_scaling_golden.json"
cp -r "$src/models/tiny-llama3" "$tmp/scaled"
python3 - "$golden" "$src/models/tiny-llama3/config.json" "$tmp/scaled/config.json" <<'PY'
import json, sys
golden, config = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
config["rope_scaling"] = golden["rope_scaling"]
json.dump(config, open(sys.argv[3], "w"), indent=2)
PY
ids=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$golden")
"$LEAP" score --model "$tmp/scaled" --tokens "$ids" > "$tmp/scaled.json" || exit 1
"$LEAP" score --model "$src/models/tiny-llama3" --tokens "$ids" > "$tmp/plain.json" || exit 1
python3 - "$golden" "$tmp/scaled.json" "$tmp/plain.json" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["logprobs"]
scaled, plain = (json.load(open(p))["logprobs"] for p in sys.argv[2:4])
d_scaled = max(abs(a - b) for a, b in zip(want, scaled))
d_plain = max(abs(a - b) for a, b in zip(want, plain))
print(f"max |leap - transformers| = {d_scaled:.3g} with rope_scaling, {d_plain:.3g} without")
ok = len(scaled) == len(want) and d_scaled < 1e-4 and d_plain > 1e-3
sys.exit(0 if ok else 1)
PY
