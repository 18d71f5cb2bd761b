#!/usr/bin/env bash
# benchmarks/gpu/kernel_profile.sh RESULTS_DIR — where the GPU time of a training step and of
# decoding goes, kernel by kernel. It builds leap_gpu_check as benchmarks/gpu_check.sh does
# (LEAP_GPU_BUILD_ONLY=1), then runs Nsight Compute with one metric, each kernel's duration
# (gpu__time_duration.sum, clocks left alone), over:
#   - `train` with one warm-up and one timed step of the ~124M model at B = 8, T = 1024;
#   - `decode` at batch 64 with a 128-token prompt and 16 decode steps.
# kernel_profile.py sums the durations per kernel name into RESULTS_DIR/<run>_kernels.txt (share
# of the GPU time, calls, mean) and the raw CSVs go into RESULTS_DIR/kernel_profile.tar.gz.
# Kernels run serialised under the profiler, so the sum is GPU time without overlap, not the step's
# wall time; use it to rank kernels, and gpu_check.sh for the step time.
set -u
if [[ $# -ne 1 ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
RESULTS="$(mkdir -p "$1" && cd "$1" && pwd)" || { echo "cannot create $1" >&2; exit 2; }
BUILD="${LEAP_GPU_BUILD:-$ROOT/build-gpu}"
PY="${PYTHON:-python3}"
export PATH="$PATH:/usr/local/cuda/bin"
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -n 1)"
if [[ -z "$NCU" ]]; then
  echo "kernel_profile: Nsight Compute (ncu) not found" >&2
  exit 3
fi
WORK="$BUILD/kernel-profile"
rm -rf "$WORK" && mkdir -p "$WORK"
LEAP_GPU_BUILD_ONLY=1 LEAP_GPU_WORK="$WORK/build" "$ROOT/benchmarks/gpu_check.sh" "$WORK/build-summary" \
  > "$WORK/build.txt" 2>&1 || { tail -n 20 "$WORK/build.txt"; exit 1; }
CHECK="$BUILD/cuda/leap_gpu_check"
profile() {
  local name=$1; shift
  "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --log-file "$WORK/$name.csv" "$CHECK" "$@" > "$WORK/$name.json" 2> "$WORK/$name.log"
  echo "$name: exit $? ($(grep -c gpu__time_duration "$WORK/$name.csv" 2> /dev/null) kernels)"
  "$PY" "$ROOT/benchmarks/gpu/kernel_profile.py" "$WORK/$name.csv" | tee "$RESULTS/${name}_kernels.txt"
}
profile train train --steps=1
profile decode decode --tokens=16
tar -C "$WORK" -czf "$RESULTS/kernel_profile.tar.gz" --exclude=./build --exclude=./build-summary .
