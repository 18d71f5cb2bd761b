#!/usr/bin/env bash
# benchmarks/gpu_check.sh RESULTS_DIR — the GPU check of LEAP, one command for one GPU machine.
# It fits 9 minutes (LEAP_GPU_BUDGET_S, default 500 s of its own, so an outer `timeout 9m` never
# cuts it) and needs only the CUDA toolkit, CMake and Python with PyTorch; the Debian
# development packages of the full build may be missing. It:
#   1. prints what is present (GPU, driver, toolkit, CMake, PyTorch, NCCL, optional libraries);
#   2. configures and builds the GPU-only target (LEAP_GPU_ONLY=ON, sm_90 unless
#      LEAP_GPU_ARCH says otherwise) into $LEAP_GPU_BUILD (default build-gpu/), with
#      $LEAP_GPU_JOBS parallel jobs (default: every core); libraries this machine lacks are
#      taken from $LEAP_GPU_DEPS (default build-gpu-deps/ when it exists), which
#      scripts/stage_gpu_deps.sh fills on a machine that has them;
#   3. runs the checks: device report, backend op parity against this machine's PyTorch,
#      the sandbox's GPU executor with its timing, a one-rank NCCL communicator;
#   4. runs the benchmarks: cuBLASLt GEMM throughput, training-step MFU (~124M parameters,
#      T = 1024; and a 1.5B-class step at T = 2048 with leap plan's memory beside the measured),
#      decode at batch 64 against the HBM-bandwidth bound (and at batch 1), and PyTorch eager on
#      the same model;
#   5. leaves two files in RESULTS_DIR: summary.txt and gpu_check.tar.gz (every step's JSON
#      and log, the environment, the build logs, figures.json; not the op reference tensors).
#      The archive is rewritten after every step, so a run cut short still leaves one.
# Each step gets what is left of the budget, at most its own limit; a step that cannot run says
# why (SKIPPED: reason), including a check whose tier this build left out, and the others still
# run. The exit code is 1 when a check failed, else 0.
# To run it on a GPU machine (the dependencies staged on this checkout's machine, or there):
#   scripts/stage_gpu_deps.sh && timeout 9m benchmarks/gpu_check.sh RESULTS_DIR
# LEAP_GPU_BUILD_ONLY=1 stops after the build (for benchmarks/gpu/kernel_profile.sh).
set -u
if [[ $# -ne 1 || "$1" == -h || "$1" == --help ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
T_START=$(date +%s)
BUDGET="${LEAP_GPU_BUDGET_S:-500}"
DEADLINE=$(( T_START + BUDGET ))
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RESULTS="$(mkdir -p "$1" && cd "$1" && pwd)" || { echo "cannot create $1" >&2; exit 2; }
BUILD="${LEAP_GPU_BUILD:-$ROOT/build-gpu}"
ARCH="${LEAP_GPU_ARCH:-90}"
JOBS="${LEAP_GPU_JOBS:-$(nproc)}"
DEPS="${LEAP_GPU_DEPS:-$ROOT/build-gpu-deps}"
PY="${PYTHON:-python3}"
export PATH="$PATH:/usr/local/cuda/bin"
# Every step writes into WORK; RESULTS_DIR receives only summary.txt and the archive.
WORK="${LEAP_GPU_WORK:-$BUILD/check-results}"
rm -rf "$WORK" && mkdir -p "$WORK" || { echo "cannot create $WORK" >&2; exit 2; }
SUMMARY="$WORK/summary.txt"
ARCHIVE="$RESULTS/gpu_check.tar.gz"
: > "$SUMMARY"
failed=0

note() { echo "$*" | tee -a "$SUMMARY"; }
have() { command -v "$1" > /dev/null 2>&1; }
left() { echo $(( DEADLINE - $(date +%s) )); }
# clip N: N seconds, or what is left of the budget less 15 s to pack when that is less (at least 1).
clip() { local a=$(( $(left) - 15 )); (( a < 1 )) && a=1; echo $(( $1 < a ? $1 : a )); }
# Every step runs under `timeout -k 10`: a child stuck in a driver call that ignores SIGTERM is
# killed 10 s later instead of holding the script past its budget.
# The archive and summary.txt into RESULTS_DIR, without the op reference tensors (tens of MB,
# remade from op_reference.py's seed on any machine).
pack() {
  tar -C "$WORK" --exclude=./op_reference -czf "$ARCHIVE.tmp" . 2> /dev/null && mv -f "$ARCHIVE.tmp" "$ARCHIVE"
  cp -f "$SUMMARY" "$RESULTS/summary.txt"
}
trap 'note "STOPPED by a signal after $(( $(date +%s) - T_START )) s; the results so far are packed"; pack; exit 1' TERM INT
note "== gpu_check: budget ${BUDGET} s; rerun with: scripts/stage_gpu_deps.sh && timeout 9m benchmarks/gpu_check.sh RESULTS_DIR"

# ---- 1. what is present ----------------------------------------------------------------------
{
  echo "== environment ($(date -u +%FT%TZ), $(hostname))"
  if have nvidia-smi; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
      --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  if have nvcc; then echo "nvcc: $(nvcc --version | tail -n 2 | head -n 1)"; else echo "nvcc: MISSING"; fi
  if have cmake; then echo "cmake: $(cmake --version | head -n 1)"; else echo "cmake: MISSING"; fi
  if have "$PY"; then
    timeout -k 5 60 "$PY" - <<'PYEOF' 2>&1
import importlib.util, sys
print("python:", sys.version.split()[0])
try:
    import torch
    print("torch:", torch.__version__, "cuda", torch.version.cuda, "device available",
          torch.cuda.is_available())
except Exception as e:  # the checks that need it say so later
    print("torch: MISSING (%s)" % e)
try:
    spec = importlib.util.find_spec("nvidia.nccl")
except ImportError:  # no `nvidia` package at all
    spec = None
print("python nvidia.nccl:", "present" if spec else "absent")
PYEOF
  else
    echo "python: MISSING ($PY)"
  fi
  for lib in mpicc h5cc; do
    if have $lib; then echo "$lib: present"; else echo "$lib: absent (not needed here)"; fi
  done
  for h in boost/program_options.hpp nlohmann/json.hpp fmt/format.h cblas.h gtest/gtest.h; do
    if [[ -e /usr/include/$h || -e /usr/local/include/$h ]]; then echo "$h: present"
    else echo "$h: absent"; fi
  done
  for d in /usr/local/cuda/include /usr/include; do
    [[ -e $d/nccl.h ]] && echo "nccl.h: $d"
  done
  if [[ -d "$DEPS/include" ]]; then echo "staged dependencies: $DEPS ($(ls "$DEPS/include" | tr '\n' ' '))"
  else echo "staged dependencies: none ($DEPS absent; scripts/stage_gpu_deps.sh makes it)"; fi
} 2>&1 | tee "$WORK/environment.txt" | tee -a "$SUMMARY"
pack

if ! have nvcc || ! have cmake; then
  note "SKIPPED everything: the GPU-only build needs nvcc and cmake"
  pack
  exit 1
fi

# ---- 2. configure and build the GPU-only target ----------------------------------------------
cmake_args=(-S "$ROOT" -B "$BUILD" -DLEAP_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_CUDA_ARCHITECTURES="$ARCH")
[[ -d "$DEPS/include" ]] && cmake_args+=(-DLEAP_GPU_DEPS="$(cd "$DEPS" && pwd)")
if have "$PY"; then
  # Some PyTorch wheels ship fmt headers, and most ship NCCL; they stand in where neither
  # Debian's packages nor the staged folder have them.
  torch_include="$(timeout -k 5 60 "$PY" -c 'import torch.utils.cpp_extension as c; print(c.include_paths()[0])' 2>/dev/null)"
  [[ -n "$torch_include" ]] && cmake_args+=(-DLEAP_EXTRA_INCLUDE="$torch_include")
  nccl_dir="$(timeout -k 5 60 "$PY" -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null)"
  if [[ ! -e /usr/local/cuda/include/nccl.h && ! -e /usr/include/nccl.h && -n "$nccl_dir" ]]; then
    cmake_args+=(-DNCCL_ROOT="$nccl_dir")
  fi
fi
note "== build: cmake ${cmake_args[*]}"
start=$(date +%s)
if ! cmake "${cmake_args[@]}" > "$WORK/configure.log" 2>&1; then
  note "FAILED configure (see configure.log):"; tail -n 15 "$WORK/configure.log" | tee -a "$SUMMARY"
  pack; exit 1
fi
grep "LEAP" "$WORK/configure.log" | tee -a "$SUMMARY"
# The build may use the budget less a minute, so that at least the device report runs.
build_limit=$(( $(left) > 90 ? $(left) - 60 : 30 ))
timeout -k 10 "$build_limit" cmake --build "$BUILD" -j "$JOBS" --target leap_gpu_check > "$WORK/build.log" 2>&1
rc=$?
if (( rc == 124 )); then
  note "FAILED build: not done within ${build_limit} s of the ${BUDGET} s budget (see build.log;" \
       "rerun to continue it, or raise LEAP_GPU_BUDGET_S)"
  pack; exit 1
elif (( rc != 0 )); then
  note "FAILED build (see build.log):"; grep -m 20 -E "error|Error" "$WORK/build.log" | tee -a "$SUMMARY"
  pack; exit 1
fi
note "build: $(( $(date +%s) - start )) s; $(left) s of the budget left"
pack
CHECK="$BUILD/cuda/leap_gpu_check"
# LEAP_GPU_BUILD_ONLY=1: stop here (benchmarks/gpu/kernel_profile.sh builds through this script).
if [[ "${LEAP_GPU_BUILD_ONLY:-0}" == 1 ]]; then
  note "build only (LEAP_GPU_BUILD_ONLY=1): $CHECK"
  exit 0
fi

# run_step NAME TIMEOUT_S COMMAND...: stdout -> NAME.json, stderr -> NAME.log, verdict in summary.
# The step runs at most TIMEOUT_S, and never past the budget (less 15 s to pack).
run_step() {
  local name=$1 limit=$2; shift 2
  local t0 rc avail
  t0=$(date +%s)
  avail=$(( $(left) - 15 ))
  if (( avail < 10 )); then
    note "SKIPPED $name: the ${BUDGET} s budget is spent"; return
  fi
  (( limit > avail )) && limit=$avail
  timeout -k 10 "$limit" "$@" > "$WORK/$name.json" 2> "$WORK/$name.log"
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  case $rc in
    0) note "ok      $name (${dt}s): $(head -c 600 "$WORK/$name.json")" ;;
    3) note "SKIPPED $name: $(tail -n 1 "$WORK/$name.log")" ;;
    124|137) note "FAILED  $name: timed out after ${limit}s"; failed=1 ;;
    *) note "FAILED  $name (exit $rc): $(tail -n 3 "$WORK/$name.log" | tr '\n' ' ')"
       [[ -s "$WORK/$name.json" ]] && note "        $(head -c 600 "$WORK/$name.json")"
       failed=1 ;;
  esac
  pack
}
torch_ok() { have "$PY" && timeout -k 5 "$(clip 60)" "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

# ---- 3. checks -------------------------------------------------------------------------------
note "== checks"
run_step info 30 "$CHECK" info
if torch_ok; then
  refdir="$WORK/op_reference"
  if timeout -k 10 "$(clip 120)" "$PY" "$ROOT/benchmarks/gpu/op_reference.py" "$refdir" > "$WORK/op_reference.log" 2>&1; then
    run_step ops 60 "$CHECK" ops --ref="$refdir"
  else
    note "FAILED  op_reference.py (see op_reference.log)"; failed=1
  fi
else
  note "SKIPPED ops: PyTorch with a CUDA device is not available to make the reference"
fi
run_step executor 60 "$CHECK" executor --suite="$ROOT/tasks/level1.jsonl"
# The same, confined as a GPU sandbox worker confines itself; under strace where it exists, for
# the record of what a confined GPU worker touches (docs/design.md, Isolation).
if have strace; then
  run_step executor_confined 90 strace -f -qq -o "$WORK/worker_access_gpu.trace" \
    -e trace=%file,%network,%process,write "$CHECK" executor_confined --suite="$ROOT/tasks/level1.jsonl"
  if [[ -s "$WORK/worker_access_gpu.trace" ]]; then
    bash "$ROOT/scripts/record_worker_access.sh" --from-trace "$WORK/worker_access_gpu.trace" \
      "$WORK/worker_access_gpu.md" >> "$SUMMARY" 2>&1 || note "FAILED  worker access record"
  fi
  rm -f "$WORK/worker_access_gpu.trace"
else
  run_step executor_confined 60 "$CHECK" executor_confined --suite="$ROOT/tasks/level1.jsonl"
  note "        (no strace here: the GPU worker's access record was not made)"
fi
run_step nccl 45 "$CHECK" nccl

# ---- 4. benchmarks ---------------------------------------------------------------------------
note "== benchmarks"
run_step gemm 45 "$CHECK" gemm
run_step train 90 "$CHECK" train
# The same step as optim.master_weights = optimizer runs it (the matrices in bf16 only, on CUDA's
# virtual memory; fp32 masters apart), never run before: its memory against the plan, and its
# log-probabilities against an fp32 model holding the same values (they should be equal).
run_step train_masters 60 "$CHECK" train --masters=optimizer
run_step decode 60 "$CHECK" decode
# One sequence at a time, as a rank decoded when sampler.batch_seqs followed train.micro_batch_seqs = 1
# (the Qwen configs' training micro-batch): what the decoding batch buys, per token.
run_step decode_batch1 30 "$CHECK" decode --batch=1
if torch_ok; then
  run_step torch_eager 120 "$PY" "$ROOT/benchmarks/gpu/torch_eager.py"
else
  note "SKIPPED torch_eager: PyTorch with a CUDA device is not available"
fi
# At the end, so that it never takes the others' budget: the 1.5B-class step at T = 2048 (random
# weights: 6 GB made on the host first), its MFU, and leap plan's memory against cudaMemGetInfo's.
run_step train_1p5b 120 "$CHECK" train --config="$ROOT/models/qwen2.5-coder-1.5b/config.json" --batch=1 \
  --seq=2048 --steps=3
# A Qwen3 step (Qwen3-0.6B's shapes: per-head q/k norms, 16 heads of 128 on a width of 1024), the
# CUDA path of model_type qwen3, with its plan against the measured memory.
run_step train_qwen3 60 "$CHECK" train --config="$ROOT/models/qwen3-0.6b/config.json" --batch=1 \
  --seq=2048 --steps=2
if have "$PY"; then
  "$PY" "$ROOT/benchmarks/gpu/summarize.py" "$WORK" 2>&1 | tee -a "$SUMMARY"
fi
note "total: $(( $(date +%s) - T_START )) s of the ${BUDGET} s budget"
note "results: $RESULTS/summary.txt and $ARCHIVE (tar -xzf it for every step's JSON and log)"
pack
exit $failed
