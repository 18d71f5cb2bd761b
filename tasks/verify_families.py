#!/usr/bin/env python3
"""Checks tasks/families.jsonl against its host references without building the C++ tests.

A developer's tool (standard library only); the C++ tests in tests/tasks/ are the real gate.

  python3 tasks/verify_families.py nvrtc [--filter RE]
      Compiles every reference with NVRTC (libnvrtc through ctypes) with the options of
      tests/tasks/test_committed_suites.cpp, fails on any warning, and checks that every launch
      line's kernel takes as many parameters as the line passes.
  python3 tasks/verify_families.py oracle LEAP [--filter RE] [--jobs N] [--fresh]
      Runs `LEAP check --device cpu` on every task with an "oracle" answer: one thread that copies
      the inputs to doubles, runs the task's host reference (the same text make_families.py writes
      to tests/tasks/family_host_refs.inc, compiled here as device code) and stores the results.
      The sandbox runs the reference and the oracle on three trials and compares them with the
      task's tolerances: a pass means the reference computes what the host reference does on
      cpu_params, within the interpreter's memory and race checks. Prints the slowest tasks.
  --fresh checks the combinations no split shows (make_families.py --fresh) instead of the suite.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_families as mf  # noqa: E402

CUDA_INCLUDE = "/usr/local/cuda/include"
NVRTC_LIB = "/usr/local/cuda/lib64/libnvrtc.so"
LAUNCH_RE = re.compile(r"^\s*// launch:\s*(.+?)<<<(.*)>>>\((.*)\)\s*$")


def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def code_of(reference):
    return reference[len("```cuda\n"):-len("\n```")]


class Nvrtc:
    def __init__(self):
        self.lib = ctypes.CDLL(NVRTC_LIB)

    def compile(self, code, names):
        """(ok, log, {name: param count}) for `code` compiled to PTX at compute_80."""
        lib = self.lib
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), code.encode(), b"reference.cu", 0, None, None) == 0
        for n in names:
            assert lib.nvrtcAddNameExpression(prog, n.encode()) == 0
        opts = [b"-std=c++17", b"--gpu-architecture=compute_80", ("-I" + CUDA_INCLUDE).encode()]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        counts = {}
        if rc == 0:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, ptx)
            ptx = ptx.value.decode()
            for n in names:
                lowered = ctypes.c_char_p()
                lib.nvrtcGetLoweredName(prog, n.encode(), ctypes.byref(lowered))
                at = ptx.find(".entry " + lowered.value.decode() + "(")
                close = ptx.find(")", at)
                counts[n] = -1 if at < 0 else ptx[at:close].count(".param")
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return rc == 0, log.value.decode(errors="replace"), counts


def check_nvrtc(built):
    nv = Nvrtc()
    bad = 0
    for b in built:
        code = code_of(b.obj["reference"])
        launches = [LAUNCH_RE.match(line) for line in code.split("\n")]
        launches = [(m.group(1), split_top(m.group(3))) for m in launches if m]
        ok, log, counts = nv.compile(code, sorted({k for k, _ in launches}))
        problems = []
        if not ok or "warning" in log:
            problems.append(log.strip())
        for k, args in launches:
            if ok and counts.get(k) != len(args):
                problems.append(f"{k}: the entry has {counts.get(k)} parameters, the launch line passes {len(args)}")
        if problems:
            bad += 1
            print(f"FAIL {b.obj['id']}:\n  " + "\n  ".join(problems))
    print(f"nvrtc: {len(built) - bad} of {len(built)} references compile cleanly")
    return bad == 0


def count_expr(shape):
    return " * ".join(f"({d})" for d in shape)


def oracle_answer(index, b):
    """One thread: inputs to doubles (scratch i64 buffers reinterpreted), host reference, outputs."""
    obj = b.obj
    ints = [k for k, v in obj["params"].items() if isinstance(v, int)]
    floats = [k for k, v in obj["params"].items() if isinstance(v, float)]
    dts = {x["dtype"] for x in obj["buffers"]}
    sig, args, body, scratch = [], [], [], []
    ctype = {"f32": "float", "f16": "__half", "bf16": "__nv_bfloat16", "i32": "int", "i64": "long long",
             "u8": "unsigned char"}
    load = {"f16": "(double)__half2float({})", "bf16": "(double)__bfloat162float({})"}
    store = {"f16": "__float2half_rn((float){})", "bf16": "__float2bfloat16_rn((float){})", "f32": "(float){}",
             "i32": "(int){}", "i64": "(long long){}", "u8": "(unsigned char){}"}
    for x in obj["buffers"]:
        const = "const " if x["role"] == "in" else ""
        sig.append(f"{const}{ctype[x['dtype']]}* {x['name']}")
        args.append(x["name"])
    for x in obj["buffers"]:
        n = count_expr(x["shape"])
        sig.append(f"long long* s_{x['name']}")
        args.append(f"s_{x['name']}")
        scratch.append(f"// scratch: s_{x['name']} i64[{n}]")
        body.append(f"double* d_{x['name']} = reinterpret_cast<double*>(s_{x['name']});")
        if x["role"] != "out":
            ld = load.get(x["dtype"], "(double){}").format(f"{x['name']}[e]")
            body.append(f"for (long long e = 0; e < {n}; ++e) d_{x['name']}[e] = {ld};")
    sig += [f"int {k}" for k in ints] + [f"float {k}" for k in floats]
    args += ints + floats
    body.append("double* fam_bufs[] = {" + ", ".join(f"d_{x['name']}" for x in obj["buffers"]) + "};")
    body.append("long long fam_ints[] = {" + ", ".join(ints + ["0"]) + "};")
    body.append("double fam_flts[] = {" + ", ".join([f"(double){k}" for k in floats] + ["0.0"]) + "};")
    body.append(f"fam::ref_{index}(fam_bufs, fam_ints, fam_flts);")
    for x in obj["buffers"]:
        if x["role"] != "in":
            st = store[x["dtype"]].format(f"d_{x['name']}[e]")
            body.append(f"for (long long e = 0; e < {count_expr(x['shape'])}; ++e) {x['name']}[e] = {st};")
    includes = "".join(f"#include <{h}>\n" for d, h in (("f16", "cuda_fp16.h"), ("bf16", "cuda_bf16.h")) if d in dts)
    code = (includes + "#define FAM_HD __device__\nnamespace fam {\n" + mf.host_prelude() + "\n"
            + mf.host_function(index, b) + "\n}  // namespace fam\n"
            + "__global__ void oracle(" + ", ".join(sig) + ") {\n  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
            + "".join("  " + line + "\n" for line in body) + "}\n"
            + "\n".join(scratch) + f"\n// launch: oracle<<<1, 1>>>({', '.join(args)})\n")
    return "```cuda\n" + code + "```\n"


def check_oracle(indexed, leap, jobs, suite):
    """indexed: (k, built task) pairs, k the task's position in the suite (its ref_<k>)."""
    tmp = tempfile.mkdtemp(prefix="leap_oracle_")

    def one(kb):
        k, b = kb
        path = os.path.join(tmp, f"oracle_{k}.md")
        with open(path, "w") as f:
            f.write(oracle_answer(k, b))
        p = subprocess.run(["nice", leap, "check", "--suite", suite, "--task", b.obj["id"], "--answer", path,
                            "--device", "cpu", "--sandbox.instruction_budget=2000000000"],
                           capture_output=True, text=True)
        try:
            r = json.loads(p.stdout)
        except ValueError:
            return b, {"verdict": "NO_JSON", "feedback": p.stdout + p.stderr}
        return b, r

    bad = 0
    results = []
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for b, r in ex.map(one, indexed):
            results.append((b, r))
            if r.get("verdict") != "OK":
                bad += 1
                print(f"FAIL {b.obj['id']}: {r.get('verdict')}: {r.get('feedback')}", flush=True)
    slow = sorted(results, key=lambda br: -(br[1].get("exec_ms") or 0))[:10]
    print("slowest (exec_ms of the oracle's 3 trials, a one-thread double-precision run):")
    for b, r in slow:
        print(f"  {b.obj['id']}: {r.get('exec_ms')}")
    print(f"oracle: {len(indexed) - bad} of {len(indexed)} references match their host reference")
    return bad == 0


def main(argv):
    if not argv or argv[0] not in ("nvrtc", "oracle"):
        print(__doc__)
        return 2
    flt = argv[argv.index("--filter") + 1] if "--filter" in argv else ""
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 2
    suite = os.path.join(HERE, "families.jsonl")
    tasks = mf.build_all()
    if "--fresh" in argv:
        # The combinations no split shows (make_families.py --fresh), in a suite file of their own.
        tasks = mf.fresh_all()
        suite = os.path.join(tempfile.mkdtemp(prefix="leap_fresh_"), "fresh.jsonl")
        with open(suite, "w", encoding="utf-8") as f:
            f.write(mf.ms.suite_text([b.obj for b in tasks]))
    indexed = [(k, b) for k, b in enumerate(tasks) if re.search(flt, b.obj["id"])]
    if argv[0] == "nvrtc":
        return 0 if check_nvrtc([b for _, b in indexed]) else 1
    return 0 if check_oracle(indexed, argv[1], jobs, suite) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
