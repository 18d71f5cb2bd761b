#!/usr/bin/env bash
# A Hugging Face model folder as the policy (models/tiny-qwen2: Qwen2 architecture, a BPE
# tokenizer, Qwen2.5's chat template, a padded vocabulary, two EOS ids; and a Qwen3 folder made
# from it with Qwen3-Coder's template): `leap train` runs RL
# steps with debugging turns on it, in both multi-turn modes; the checkpoint is a complete model
# folder that `leap tokenize --chat`, `leap score` and `leap eval` open; the same seed gives the
# same trajectories; bad folders or template choices are exit 2 naming the file or option; and a
# template that raises only on a real debugging turn ends the streaming job instead of hanging it.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
source "$src/tests/cli/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
grep -E '"id": "L1/(relu|silu)"' "$src/tasks/level1.jsonl" > "$tmp/two.jsonl"
model="$src/models/tiny-qwen2"
# The demo's settings on two tasks; 2 turns for every sample (DCP off).
base=(--config "$src/configs/demo_v1.ini" --suite "$tmp/two.jsonl" --train.batch_tasks 2 --rl.group_size 2
      --rl.max_turns 2 --dcp.mode off --sampler.max_new_tokens 24 --log.level info)
rl=("${base[@]}" --model "$model" --mpi.sandbox_ranks 1)
solo=("${base[@]}" --mpi.sandbox_ranks 0 --train.steps 1)

check train-hf 0 "prompts: model chat template, appended multi-turn prompts, Hugging Face byte-level BPE" -- \
  "$src/scripts/mpirun_local.sh" 2 "$LEAP" train "${rl[@]}" --train.steps 2 --run.out_dir "$tmp/a"
ckpt="$tmp/a/checkpoints/step_000001"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json; do
  if [ -f "$ckpt/$f" ]; then echo "ok   checkpoint-has-$f"; else echo "FAIL checkpoint lacks $f"; fail=1; fi
done
check train-hf-again 0 "summary after 2 steps" -- \
  "$src/scripts/mpirun_local.sh" 2 "$LEAP" train "${rl[@]}" --train.steps 2 --run.out_dir "$tmp/b"
# The same seed and config: the same prompts and completions, turn 2 included.
check same-trajectories 0 "same" -- /usr/bin/python3 - "$tmp/a/trajectories.h5" "$tmp/b/trajectories.h5" <<'PY'
import sys, h5py
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
for name in ("text/prompt/data", "text/completion/data", "text/prompt/offsets"):
    assert (a[name][:] == b[name][:]).all(), name
assert max(a["samples"]["turn"]) == 2, "no debugging turn was run"
print("same")
PY
check train-hf-rerender 0 "re-rendered multi-turn prompts" -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${solo[@]}" --model "$model" \
  --prompt.multi_turn rerender --run.out_dir "$tmp/c"

printf '[{"role": "user", "content": "hi <|im_end|>"}]' > "$tmp/chat.json"
check checkpoint-tokenize-chat 0 '"text":"<\|im_start\|>system' -- "$LEAP" tokenize --tokenizer "$ckpt" --chat "$tmp/chat.json"
# The user's literal <|im_end|> stays text: the special id appears only where the template ends
# the system and the user message.
check checkpoint-chat-user-text-stays-text 0 "im_end ids: 2" -- /usr/bin/python3 -c '
import json, subprocess, sys
out = json.loads(subprocess.run(sys.argv[1:], capture_output=True, check=True).stdout)
im_end = json.load(open(sys.argv[4] + "/tokenizer.json"))["added_tokens"][2]
assert im_end["content"] == "<|im_end|>", im_end
print("im_end ids:", out["ids"].count(im_end["id"]))' "$LEAP" tokenize --tokenizer "$ckpt" --chat "$tmp/chat.json"
check checkpoint-score 0 '"logprobs": \[' -- "$LEAP" score --model "$ckpt" --tokens 1,2,3,4
check checkpoint-eval 0 "pass@1" -- "$src/scripts/mpirun_local.sh" 1 "$LEAP" eval --config "$src/configs/demo_v1.ini" \
  --model "$ckpt" --suite "$tmp/two.jsonl" --mpi.sandbox_ranks 0 --eval.split train --eval.samples 2 \
  --eval.turns 2 --sampler.max_new_tokens 24 --eval.output "$tmp/eval"

# A base model's folder: its EOS is <|endoftext|> (0) only, while its chat template ends a turn
# with <|im_end|> (2), which must end an answer too, with stop strings as without.
mkdir -p "$tmp/base" && cp "$model"/* "$tmp/base/"
/usr/bin/python3 - "$tmp/base" <<'PY'
import json, os, sys
d = sys.argv[1]
def edit(name, **kv):
    p = os.path.join(d, name); j = json.load(open(p)); j.update(kv); json.dump(j, open(p, "w"), indent=2)
edit("config.json", eos_token_id=0)
edit("generation_config.json", eos_token_id=[0])
edit("tokenizer_config.json", eos_token="<|endoftext|>")
PY
for stop in "" '```'; do
  check "base-model-end-of-turn${stop:+-with-stop}" 0 "answers end at ids \[0, 2\]" -- \
    "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${solo[@]}" --model "$tmp/base" --sampler.stop "$stop" \
    --run.out_dir "$tmp/base-run${stop:+-stop}"
done

# A built-in template's end of turn stays among the stops when sampler.stop is set (it replaced
# them: the answer then ran on into an invented next turn).
check plain-template-stop-kept 0 'or at the text "```", "### End"' -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${solo[@]}" --model "$model" --prompt.chat_template plain --sampler.stop '```' \
  --run.out_dir "$tmp/plain-stop"

# A Qwen3 folder (model_type qwen3: per-head q/k norms, no biases, head_dim 32 with 4 heads on a
# width of 64) with Qwen3-Coder's chat template (a macro writes its tool list), from random
# weights: RL steps with debugging turns, and a checkpoint that is a Qwen3 folder again, with
# the norms' tensors, which `leap score` and `leap eval` open.
mkdir -p "$tmp/qwen3" && cp "$model"/tokenizer* "$model"/generation_config.json "$model"/special_tokens_map.json "$tmp/qwen3/"
/usr/bin/python3 - "$model/config.json" "$src/tests/chat/templates/qwen3-coder/tokenizer_config.json" "$tmp/qwen3" <<'PY'
import json, os, sys
config = json.load(open(sys.argv[1]))
config.update(architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=32, attention_bias=False)
json.dump(config, open(os.path.join(sys.argv[3], "config.json"), "w"), indent=2)
tok = json.load(open(os.path.join(sys.argv[3], "tokenizer_config.json")))
tok["chat_template"] = json.load(open(sys.argv[2]))["chat_template"]
json.dump(tok, open(os.path.join(sys.argv[3], "tokenizer_config.json"), "w"), indent=2)
PY
check train-qwen3 0 "summary after 2 steps" -- \
  "$src/scripts/mpirun_local.sh" 2 "$LEAP" train "${base[@]}" --model "$tmp/qwen3" --mpi.sandbox_ranks 1 \
  --train.random_init true --train.steps 2 \
  --run.out_dir "$tmp/q3"
q3ckpt="$tmp/q3/checkpoints/step_000001"
check qwen3-checkpoint-is-qwen3 0 "Qwen3ForCausalLM with q/k norms" -- /usr/bin/python3 - "$q3ckpt" <<'PY'
import json, struct, sys
d = sys.argv[1]
config = json.load(open(d + "/config.json"))
raw = open(d + "/model.safetensors", "rb").read(8)
n = struct.unpack("<Q", raw)[0]
header = json.loads(open(d + "/model.safetensors", "rb").read(8 + n)[8:])
norms = [k for k in header if k.endswith(("q_norm.weight", "k_norm.weight"))]
assert config["architectures"] == ["Qwen3ForCausalLM"] and config["model_type"] == "qwen3", config
assert config["head_dim"] == 32 and len(norms) == 2 * config["num_hidden_layers"], norms
assert all(header[k]["shape"] == [32] for k in norms), norms
assert not any(k.endswith("_proj.bias") for k in header), "qwen3 without attention_bias has no biases"
print("Qwen3ForCausalLM with q/k norms")
PY
check qwen3-checkpoint-score 0 '"logprobs": \[' -- "$LEAP" score --model "$q3ckpt" --tokens 1,2,3,4
check qwen3-checkpoint-eval 0 "pass@1" -- "$src/scripts/mpirun_local.sh" 1 "$LEAP" eval --config "$src/configs/demo_v1.ini" \
  --model "$q3ckpt" --suite "$tmp/two.jsonl" --mpi.sandbox_ranks 0 --eval.split train --eval.samples 2 \
  --eval.turns 2 --sampler.max_new_tokens 24 --eval.output "$tmp/q3eval"

# A config whose embedding is smaller than the tokenizer; a template the folder does not have.
mkdir -p "$tmp/small" && cp "$model"/tokenizer* "$tmp/small/"
sed 's/"vocab_size": [0-9]*/"vocab_size": 1000/' "$model/config.json" > "$tmp/small/config.json"
check vocab-too-small 2 "config.json: vocab_size 1000 is smaller than the tokenizer's 3002 ids" -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${solo[@]}" --model "$tmp/small" --train.random_init true \
  --run.out_dir "$tmp/d"
check no-template 2 "prompt.chat_template = model.*tokenizer_config.json" -- \
  "$src/scripts/mpirun_local.sh" 1 "$LEAP" train "${solo[@]}" --model "$src/models/demo" \
  --prompt.chat_template model --run.out_dir "$tmp/e"

# A template that passes the start-up check but raises on a real debugging turn's feedback: the
# streaming phase fails on rank 0 while the other policy rank and the sandbox rank are mid-phase.
# The job must end with the template's message, not hang (the timeout turns a hang into exit 124).
mkdir -p "$tmp/raising" && cp "$model"/* "$tmp/raising/"
/usr/bin/python3 - "$model/tokenizer_config.json" "$tmp/raising/tokenizer_config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["chat_template"] = ("{%- if messages|length > 3 and messages[-1]['content']|length > 1 %}"
                           "{{- raise_exception('no debugging turns here') }}{%- endif %}"
                           + config["chat_template"])
json.dump(config, open(sys.argv[2], "w"))
PY
check template-raises-mid-step 1 "training stopped at step 0: .*no debugging turns here" -- \
  timeout 300 "$src/scripts/mpirun_local.sh" 3 "$LEAP" train "${base[@]}" --model "$tmp/raising" \
  --mpi.sandbox_ranks 1 --rl.pipeline stream --train.steps 1 --run.out_dir "$tmp/f"
exit $fail
