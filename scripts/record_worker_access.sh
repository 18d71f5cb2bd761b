#!/usr/bin/env bash
# scripts/record_worker_access.sh [--device cpu|gpu] [OUT.md] — the record of what a sandbox
# worker really touches once it serves jobs, which the Landlock rules of
# src/sandbox/confinement.cpp must cover (docs/design.md, Isolation).
#
# It runs `leap check` on a few answers (correct, a compile error, a half-precision kernel)
# under strace, with sandbox.confine=off so that nothing is hidden, and lists every path the
# worker process opened, stat'ed or read after its warm-up, i.e. after it wrote its ready frame
# on descriptor 3. Lines before that (libraries, the CUDA context, libnvrtc-builtins) are
# summarised by count only.
#
# --from-trace FILE: summarise a trace made elsewhere instead: benchmarks/gpu_check.sh traces
# `leap_gpu_check executor_confined`, which confines itself as a GPU worker and then says
# "confined:" on stderr; everything after that line is what the GPU rules must allow.
# Environment: LEAP (the binary; default build/src/apps/leap).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEVICE=cpu
TRACE=""
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --from-trace) TRACE="$2"; DEVICE=gpu; shift 2 ;;
    *) echo "record_worker_access: unknown option $1" >&2; exit 2 ;;
  esac
done
OUT="${1:-$ROOT/docs/worker_access.md}"
LEAP="${LEAP:-$ROOT/build/src/apps/leap}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -n "$TRACE" ]]; then
  [[ -r "$TRACE" ]] || { echo "record_worker_access: cannot read the trace $TRACE" >&2; exit 2; }
  cp "$TRACE" "$work/trace.given"
else
command -v strace >/dev/null || { echo "record_worker_access: strace is missing (apt-get install strace)" >&2; exit 2; }
[[ -x "$LEAP" ]] || { echo "record_worker_access: no leap binary at $LEAP (build first, or set LEAP)" >&2; exit 2; }

cat > "$work/ok.md" <<'EOF'
```cuda
#include <cuda_fp16.h>
__global__ void relu(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(__float2half(fmaxf(x[i], 0.f)));
}
// launch: relu<<<cdiv(n, 256), 256>>>(x, out, n)
```
EOF
cat > "$work/bad.md" <<'EOF'
```cuda
__global__ void relu(const float* x, float* out, int n) { out[i] = x; }
// launch: relu<<<cdiv(n, 256), 256>>>(x, out, n)
```
EOF

for a in ok bad; do
  strace -f -qq -o "$work/trace.$a" \
    -e trace=%file,%network,%process,write \
    "$LEAP" check --suite "$ROOT/tasks/level1.jsonl" --task L1/relu --answer "$work/$a.md" \
    --device "$DEVICE" --sandbox.confine=off >"$work/check.$a.json" 2>/dev/null || true
done
fi

# The worker is the process that execs `leap worker`; its lock-down point is its first write on
# descriptor 3 (the ready frame).
python3 - "$work" "$OUT" "$DEVICE" <<'PY'
import re, sys, glob, collections
work, out, device = sys.argv[1:4]
after = collections.Counter()
before = 0
for path in sorted(glob.glob(work + "/trace.*")):
    lines = [l for l in open(path, errors="replace").read().splitlines() if l.strip()]
    given = path.endswith(".given")
    # A worker: the process that exec'd `leap worker`. A given trace: every thread of the
    # traced check, from its "confined:" line on.
    workers = ({l.split()[0] for l in lines} if given else
               {l.split()[0] for l in lines if 'execve(' in l and '"worker"' in l})
    ready = set()
    for l in lines:
        pid = l.split()[0]
        if pid not in workers:
            continue
        if given and ready:
            ready.add(pid)
        if pid not in ready:
            if (re.search(r'\bwrite\(2, "confined:', l) if given
                    else re.search(r"\b(write|sendto)\(3,", l)):
                ready.add(pid)
            else:
                before += 1
            continue
        m = re.search(r'\b(\w+)\((?:AT_FDCWD, |\d+, )?"([^"]*)"', l)
        if not m or m.group(1) in ("write", "sendto"):
            continue
        res = "ok" if re.search(r'= \d+', l) and '= -1' not in l else l.rsplit('=', 1)[-1].strip()
        after[(m.group(2), m.group(1), res)] += 1
with open(out + ".tmp", "w") as f:
    f.write(f"# What a {device.upper()} sandbox worker touches once it serves jobs\n\n")
    if any(p.endswith(".given") for p in glob.glob(work + "/trace.*")):
        f.write("Made by `benchmarks/gpu_check.sh`: strace of `leap_gpu_check executor_confined`,\n"
                "which confines itself as a GPU worker and verifies level-1 references. Before it\n"
                f"confined itself the process made {before} traced calls (libraries, the CUDA\n"
                "context, NVRTC's warm-up). After it:\n\n")
    else:
        f.write("Made by `scripts/record_worker_access.sh`: strace, `sandbox.confine=off`, `leap check`\n"
                "on a correct half-precision answer and on a compile error. Before its ready frame\n"
                f"the worker made {before} traced calls (libraries, NVRTC's warm-up); those need no\n"
                "rule, since confinement starts after them. After it:\n\n")
    f.write("| path | call | result | times |\n|---|---|---|---|\n")
    for (p, call, res), n in sorted(after.items()):
        f.write(f"| `{p}` | {call} | {res} | {n} |\n")
    f.write("\nOnly opening a file or listing a folder needs a Landlock right; `stat` and `getcwd`\n")
    f.write("need none. The rules (src/sandbox/confinement.cpp) give read access to the CUDA\n")
    f.write("include folder; every path opened above must lie under a rule. The failed `stat`s are\n")
    f.write("NVRTC probing for its own in-memory names, and fail the same way under confinement.\n")
import os
os.replace(out + ".tmp", out)
print(f"record_worker_access: {sum(after.values())} accesses after the ready frame -> {out}")
PY
