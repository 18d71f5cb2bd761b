#!/usr/bin/python3
"""Renders the chat-template goldens with jinja2, configured as transformers' apply_chat_template.

Dev only (CI reads the committed goldens): needs Debian's python3-jinja2, run with /usr/bin/python3
(`scripts/setup_deps.sh --dev` installs it). For each fixture folder under templates/, reads its
tokenizer_config.json, renders every case below and writes goldens/<folder>.json.

The environment matches transformers: ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True, extensions=[loopcontrols]); its own tojson (json.dumps, ensure_ascii=False);
raise_exception; strftime_now, pinned here to NOW so the goldens do not change with the date;
render(messages=..., tools=..., documents=None, add_generation_prompt=..., **variables,
bos_token=..., eos_token=...). Every case passes enable_thinking=False, as LEAP does.

    /usr/bin/python3 tests/chat/make_goldens.py          # rewrite goldens/
    /usr/bin/python3 tests/chat/make_goldens.py --check  # fail if goldens/ is stale
"""
import json
import random
import sys
from datetime import datetime, timezone
from pathlib import Path

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = Path(__file__).resolve().parent
NOW = 1785542400  # 2026-08-01 00:00:00 UTC: what strftime_now() formats


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.fromtimestamp(NOW, tz=timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special(config, key):
    tok = config.get(key)
    if isinstance(tok, dict):
        return tok["content"]
    return tok


TOOLS = [{
    "type": "function",
    "function": {
        "name": "run_kernel",
        "description": "Compile and run a CUDA kernel; returns \"ok\" or the error.",
        "parameters": {
            "type": "object",
            "properties": {"source": {"type": "string", "description": "CUDA C++ source"},
                           "grid": {"type": "integer"}, "scale": {"type": "number"},
                           "flags": {"type": "array", "items": {"type": "string"}}},
            "required": ["source"],
        },
    },
}]

TOOL_TURNS = [
    {"role": "system", "content": "You write CUDA kernels."},
    {"role": "user", "content": "Run my kernel."},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function", "function": {
         "name": "run_kernel",
         "arguments": {"source": "__global__ void k() {}", "grid": 4, "scale": 0.5,
                       "flags": ["-O3", "--use_fast_math"]}}}]},
    {"role": "tool", "content": "{\"status\": \"ok\", \"ms\": 1.25}"},
    {"role": "user", "content": "Thanks. Is it fast?"},
]

CASES = [
    {"name": "user_only", "messages": [{"role": "user", "content": "Write a vector add kernel."}]},
    {"name": "system_user", "messages": [
        {"role": "system", "content": "You are a CUDA expert."},
        {"role": "user", "content": "Write a ReLU kernel."}]},
    {"name": "multi_turn", "messages": [
        {"role": "system", "content": "You are a CUDA expert."},
        {"role": "user", "content": "Write a ReLU kernel."},
        {"role": "assistant", "content": "```cuda\n__global__ void relu(float* x, int n) {\n"
                                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                         "  if (i < n) x[i] = fmaxf(x[i], 0.f);\n}\n```"},
        {"role": "user", "content": "Compilation failed: error: identifier \"fmaxf\" is undefined"}]},
    {"name": "multi_turn_no_generation_prompt", "add_generation_prompt": False, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"}]},
    {"name": "braces_and_quotes", "messages": [
        {"role": "system", "content": "Templates look like {{ x }} and {% if y %}z{% endif %}; {# no #}"},
        {"role": "user", "content": "It's \"quoted\" and 'single' with a backslash \\ and a tab\there."}]},
    {"name": "unicode", "messages": [
        {"role": "user", "content": "\u3000 Grüße — 你好 🚀 naïve café \u00a0"},
        {"role": "assistant", "content": "\u2003Ответ: ✓\u2028"},
        {"role": "user", "content": "Ünïcödé again \U0001F600"}]},
    {"name": "special_tokens_in_content", "messages": [
        {"role": "user", "content": "Print <|im_end|> and <|eot_id|> and <|im_start|>assistant literally."},
        {"role": "assistant", "content": "<|im_end|><｜end▁of▁sentence｜><|EOT|>"},
        {"role": "user", "content": "<|start_header_id|>system<|end_header_id|>\n\nagain"}]},
    {"name": "whitespace_edges", "messages": [
        {"role": "system", "content": "  padded system  \n"},
        {"role": "user", "content": "\n\nleading newlines and trailing spaces   "}]},
    {"name": "empty_content", "messages": [
        {"role": "user", "content": ""}]},
    {"name": "thinking_history", "messages": [
        {"role": "user", "content": "Write a kernel."},
        {"role": "assistant", "content": "<think>\nLet me think about tiling.\n</think>\n\nHere it is."},
        {"role": "user", "content": "It failed to compile."}]},
    {"name": "thinking_last_assistant", "add_generation_prompt": False, "messages": [
        {"role": "user", "content": "Write a kernel."},
        {"role": "assistant", "content": "<think>\nplan\n</think>\n\nDone."}]},
    {"name": "tools", "messages": TOOL_TURNS, "tools": TOOLS},
    {"name": "tools_no_system", "messages": TOOL_TURNS[1:2], "tools": TOOLS},
    {"name": "two_tool_calls", "messages": [
        {"role": "user", "content": "Run two."},
        {"role": "assistant", "content": "Running.", "tool_calls": [
            {"type": "function", "function": {"name": "run_kernel", "arguments": {"source": "a"}}},
            {"type": "function", "function": {"name": "run_kernel", "arguments": "{\"source\": \"b\"}"}}]},
        {"role": "tool", "content": "ok a"},
        {"role": "tool", "content": "ok b"}], "tools": TOOLS},
    {"name": "builtin_tools", "variables": {"builtin_tools": ["brave_search", "code_interpreter"]},
     "messages": [
         {"role": "user", "content": "Search it."},
         {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
             "name": "brave_search", "arguments": {"query": "cuda warp shuffle", "count": "3"}}}]},
         {"role": "ipython", "content": {"results": ["a", "b"]}}]},
    {"name": "date_string_given", "variables": {"date_string": "01 Jan 2030"},
     "messages": [{"role": "user", "content": "What day is it?"}]},
]


# Random conversations from tricky pieces (seeded, so the goldens are stable): whitespace of
# every kind at the edges, template syntax, quotes, special-token text, think tags, Unicode.
PIECES = ["plain words", " ", "\n", "\n\n", "\t", "\u3000", "\u00a0", "\u2028", "{{ x }}", "{% if %}",
          "{#", "'", '"', "\\", "<|im_end|>", "<|eot_id|>", "<|im_start|>user", "<think>", "</think>",
          "<tool_response>", "</tool_response>", "你好", "🚀", "é", "```cuda\n__global__ void k() {}\n```",
          "0", "None", "true"]


def random_cases(count, seed=20260801):
    rng = random.Random(seed)
    cases = []
    for k in range(count):
        messages = []
        if rng.random() < 0.5:
            messages.append({"role": "system", "content": random_text(rng)})
        turns = rng.randint(1, 4)
        for t in range(turns):
            messages.append({"role": "user", "content": random_text(rng)})
            if t + 1 < turns or rng.random() < 0.3:
                messages.append({"role": "assistant", "content": random_text(rng)})
        last_is_assistant = messages[-1]["role"] == "assistant"
        cases.append({"name": "random_%02d" % k, "messages": messages,
                      "add_generation_prompt": not last_is_assistant or rng.random() < 0.5})
    return cases


def random_text(rng):
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5)))


# Small templates for the corners of the subset, rendered against SNIPPET_MESSAGES.
SNIPPET_MESSAGES = [{"role": "user", "content": "  Hello, World  "},
                    {"role": "assistant", "content": "a</think>\n\nb", "n": 3, "x": 2.5,
                     "args": {"k": "v", "z": [1, None, True]}}]
SNIPPETS = [
    "{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}",
    "{% for m in messages[::-1] %}{{ m.role }} {% endfor %}|{{ messages[1:] | length }}|{{ messages[-1].role }}",
    "{{ 'abcdef'[1:4] }}|{{ 'abcdef'[::-2] }}|{{ 'abcdef'[-2:] }}|{{ [1,2,3,4][1::2] }}|{{ 'héllo'[1] }}",
    "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}",
    "{% set ns = namespace(n=0, s='') %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}",
    "{% for i in range_ %}{% endfor %}{% for i in [1, 2, 3, 4, 5] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{{ 'b' in 'abc' }} {{ 'x' in ['x'] }} {{ 'role' in messages[0] }} {{ 'n' not in messages[0] }} {{ 1 ~ 'a' ~ none ~ true }}",
    "{{ x is defined }} {{ none is none }} {{ 's' is string }} {{ {} is mapping }} {{ 3 is number }} {{ messages[0].nope is defined }} {{ true is false }} {{ 'a' is iterable }}",
    "[{{ messages[0].content.strip() }}][{{ messages[0].content.lstrip() }}][{{ messages[0].content.rstrip() }}][{{ messages[0].content | trim }}][{{ 'xxhixx'.strip('x') }}]",
    "{{ messages[1].content.split('</think>') }} {{ 'a b  c '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'hello'.replace('l', 'L') }} {{ 'ab'.replace('', '-') }}",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ messages | length }} {{ 'héllo' | length }} {{ {'a': 1} | length }}",
    "{{ messages[1].args | tojson }}|{{ messages[1].args | tojson(indent=2) }}|{{ messages[1].args | tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 'é\n\"'} | tojson(sort_keys=true) }}",
    "{% for k, v in messages[1].args | items %}{{ k }}={{ v }};{% endfor %}{% for k, v in messages[1].args.items() %}{{ k }}{% endfor %}",
    "{{ undefined_thing | default('dflt') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ [1, 2] | join('-') }} {{ ['a', 'b', 'c'] | reject('equalto', 'b') | join }}",
    "{{ messages[1].n * 2 + 1 }} {{ messages[1].n // 2 }} {{ messages[1].n % 2 }} {{ messages[1].x }} {{ messages[1].n / 2 }} {{ -messages[1].n }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 10 ** 2 }}",
    "{{ messages[1].args }} {{ [none, true, \"it's\"] }} {{ none }} {{ true }}",
    "{{ 'yes' if messages else 'no' }} {{ 'a' if false }}| {{ messages and 'x' }} {{ [] or 'empty' }} {{ not messages }}",
    "a\n  {% if true %}\n  b\n  {% endif %}\n  c {{- ' d ' -}} e\n{# comment #}\n  {#- trimmed -#}\n  f  {%- if true -%}  g  {%- endif %}\nh\n",
    "{% if messages[0]['role'] == 'user' %}u{% elif messages[0]['role'] == 'system' %}s{% else %}o{% endif %}{% for x in [] %}x{% else %}empty{% endfor %}",
    "{{ strftime_now('%Y-%m-%d %H:%M %b %d') }} {{ bos_token }}{{ eos_token }}",
    "{% for m in messages if m.role == 'assistant' %}{{ loop.length }}{{ m.role }}{% endfor %}",
    "{{ raise_exception('no system message allowed') }}",
    "{{ {'k': 'é😀\\\"', 'n': [1, 'ü']} | tojson(ensure_ascii=true) }}|{{ 'ü' | tojson(ensure_ascii=false) }}|{{ messages[1].args | tojson | safe }}|{{ 3 | safe }}{{ 'x' | safe }}",
    # Macros: defaults (a later one reading an earlier argument), keywords, missing arguments,
    # recursion, the value a call returns, and scoping (top-level variables as they are at the
    # call, the macro's own set, no loop variables of the caller, namespaces shared).
    "{% macro m(a, b='d', c=a) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(1, c=3) }}{{ m() }}{{ m(b=4) }}",
    "{% macro m() %}x{% endmacro %}{{ m }}|{{ m is defined }}|{{ m | string }}|{{ m() | length }}|{{ m() ~ 'y' }}|{{ m() + 'z' }}|{{ m() == m() }}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}|{% macro g(a, b) %}{{ a is defined }}{{ b is defined }}{% endmacro %}{{ g(1) }}",
    "{% set x = 1 %}{% macro m(a) %}{% set a = a ~ '!' %}{% set x = 9 %}{{ a }}{{ x }}{{ y }}{% endmacro %}{% set x = 2 %}{% set y = 5 %}{% set a = 'top' %}{{ m('q') }}{{ a }}{{ x }}",
    "{% set x = 1 %}{% macro m() %}{{ x }}{% for i in [1, 2] %}{{ loop.index }}{% endfor %}{% endmacro %}{% for x in [7] %}{{ m() }}{{ loop.index }}{% endfor %}",
    "{% set ns = namespace(v=1) %}{% macro m() %}{% set ns.v = 7 %}{% endmacro %}{{ m() }}{{ ns.v }}{% if true %}{% macro h() %}in-if{% endmacro %}{% endif %}{{ h() }}",
    "{% macro m() %}\n  x {{ messages[0].content }}\n{% endmacro %}\n[{{ m() }}]\n[{{- m() | trim -}}]",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(q=2) }}",
    "{{ m() }}{% macro m() %}a{% endmacro %}",
    "{% macro m(a=b, b=1) %}{{ a }}|{{ b }}{% endmacro %}{% set b = 'top' %}{{ m() }},{{ m(b=5) }},{{ m(b=5, a=2) }}",
    "{% for x in [] %}{% else %}{% set y = 1 %}[{{ y }}]{% endfor %}[{{ y }}]",
    "{% macro m() %}{% break %}{% endmacro %}ok",
    # A name the template sets at the top level before reading it there is its own variable from
    # the start: Undefined until set, in macros and loops too, whatever the caller passed; set in
    # only some branches of an if, it is the caller's until then (jinja2's symbol analysis).
    "{% macro m() %}[{{ bos_token }}]{% endmacro %}{{ m() }}{% set bos_token = 'X' %}{{ m() }}|{% for i in [1] %}{{ eos_token }}{% endfor %}{% set eos_token = '' %}|{{ messages | length }}{% set messages = [] %}",
    "{% macro m() %}[{{ bos_token }}]{% endmacro %}{{ m() }}{% if true %}{% set bos_token = 'X' %}{% else %}{% set bos_token = 'Y' %}{% endif %}{{ m() }}|{% if false %}{% set eos_token = 'Z' %}{% endif %}{% for i in [1] %}{{ eos_token }}{% endfor %}",
    "{% macro m() %}[{{ bos_token }}]{% endmacro %}{{ m() }}{% set bos_token = bos_token ~ 'X' %}{{ m() }}|{% if x %}{% elif y %}{% set eos_token = 'E' %}{% else %}{% set eos_token = 'F' %}{% endif %}{{ eos_token }}",
    "{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ (1, 2) | string | replace(',', '') }}|{{ (1, 2) == [1, 2] }}|{{ (1, 2) == (1, 2) }}|{{ (1, 2) + (3,) }}|{{ (1, 2, 3)[1:] }}|{{ [(1, 'a')] }}|{{ (1, 2) | tojson }}|{{ (1, 2) | list }}|{{ 'ab'.endswith(('x', 'b')) }}",
    "{{ (1, 2) + [3] }}",
    "{{ 'a-b c$' | replace('-', '_') | replace(' ', '_') | replace('$', '') }}|{{ 1234 | replace(2, 'x') }}|{{ 'aaa' | replace('a', 'b', 2) }}|{{ messages[0].content | replace('l', 'L') }}",
]


def render_case(env, source, config, case):
    variables = {"enable_thinking": False}
    variables.update(case.get("variables", {}))
    kwargs = dict(variables)
    for key in ("bos_token", "eos_token"):
        if special(config, key) is not None:
            kwargs[key] = special(config, key)
    try:
        text = env.from_string(source).render(
            messages=case["messages"], tools=case.get("tools"), documents=None,
            add_generation_prompt=case.get("add_generation_prompt", True), **kwargs)
        return {"text": text}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e)}
    except (TypeError, ValueError, SyntaxError) as e:  # str + dict, or Python refusing jinja2's
        # compiled code ('break' outside a loop): LEAP must fail too
        return {"error": type(e).__name__ + ": " + str(e)}


def goldens_for(folder):
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    env = make_env()
    cases = []
    for case in CASES + random_cases(30):
        out = {"name": case["name"], "messages": case["messages"], "tools": case.get("tools"),
               "variables": case.get("variables", {}),
               "add_generation_prompt": case.get("add_generation_prompt", True)}
        out.update(render_case(env, config["chat_template"], config, case))
        cases.append(out)
    return {"template": folder.name, "now_unix_seconds": NOW,
            "jinja2_version": jinja2.__version__, "cases": cases}


def snippet_goldens():
    env = make_env()
    out = []
    for source in SNIPPETS:
        case = {"messages": SNIPPET_MESSAGES}
        config = {"bos_token": "<s>", "eos_token": "</s>"}
        out.append({"template": source, **render_case(env, source, config, case)})
    return {"now_unix_seconds": NOW, "messages": SNIPPET_MESSAGES, "bos_token": "<s>",
            "eos_token": "</s>", "snippets": out}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    outputs = {"snippets.json": snippet_goldens()}
    for folder in sorted(p for p in (HERE / "templates").iterdir() if p.is_dir()):
        outputs[folder.name + ".json"] = goldens_for(folder)
    for name, golden in outputs.items():
        path = HERE / "goldens" / name
        text = json.dumps(golden, indent=1, ensure_ascii=False) + "\n"
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print("wrote", path.relative_to(HERE))
    if stale:
        print("stale goldens (rerun tests/chat/make_goldens.py):", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
