#!/usr/bin/env bash
# Side by side: the CPU policy (bench_model) and the idiomatic PyTorch baseline
# (torch_baseline.py), same shapes, same thread count, run one after the other in this script.
# Prints both rates, the ratios, the per-op split and peak RSS.
#   benchmarks/compare_model_vs_torch.sh [BUILD_DIR (default build)] [THREADS (default 2)]
# OPENBLAS_CORETYPE: as the launchers set it (leap env), unless set by the caller. PyTorch at 2+
# threads runs with OMP_WAIT_POLICY=PASSIVE unless set (see the comment below).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
threads="${2:-2}"
bench="$build/benchmarks/bench_model"
[ -x "$bench" ] || { echo "build $bench first: cmake --build $build --target bench_model" >&2; exit 2; }
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
# OpenBLAS's kernels as leap's launchers choose them (scripts/openblas_coretype.sh), for both
# sides: PyTorch loads the same libblas.so.3. A value set by the caller is kept.
source scripts/openblas_coretype.sh
if [ -x "$build/src/apps/leap" ]; then
  leap_export_openblas_coretype "$build/src/apps/leap"
elif [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  echo "warning: $build/src/apps/leap is not built, so OpenBLAS keeps its own kernel choice" \
    "(build it, or set OPENBLAS_CORETYPE; see \`leap env\`)" >&2
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "== leap CPU backend ($threads threads)"
"$bench" --threads="$threads" --benchmark_filter=TrainStep --benchmark_format=json --benchmark_out="$tmp/train.json" \
  --benchmark_out_format=json > "$tmp/train.txt"
sed -n "/per-op split/,/^peak RSS/p" "$tmp/train.txt"
grep -E "^(OpenBLAS kernels|warning):" "$tmp/train.txt" || true  # torch links the same libblas
leap_train_rss=$(sed -n 's/^peak RSS: \([0-9.]*\) MiB/\1/p' "$tmp/train.txt")
"$bench" --threads="$threads" --benchmark_filter='^BM_Sample/' --no_split --benchmark_format=json \
  --benchmark_out="$tmp/sample.json" --benchmark_out_format=json > "$tmp/sample.txt"
leap_sample_rss=$(sed -n 's/^peak RSS: \([0-9.]*\) MiB/\1/p' "$tmp/sample.txt")

echo "== PyTorch baseline ($threads threads)"
# PyTorch runs its element-wise ops on OpenMP threads and its fp32 GEMMs on OpenBLAS's own
# pthreads; with both kinds spinning while idle on 2 cores, its 2-thread step ran 1.5x slower
# and its sampling 2.4x slower than with OpenMP's passive waiting (2026-12-03, Intel VM). The
# baseline gets the faster setting; leap runs as users run it.
torch_env=(env)
[ "$threads" -gt 1 ] && torch_env+=(OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}")
"${torch_env[@]}" /usr/bin/python3 benchmarks/torch_baseline.py --threads "$threads" --what train > "$tmp/torch_train.json"
"${torch_env[@]}" /usr/bin/python3 benchmarks/torch_baseline.py --threads "$threads" --what sample > "$tmp/torch_sample.json"

/usr/bin/python3 - "$tmp" "$leap_train_rss" "$leap_sample_rss" <<'PY'
import json, sys
tmp, train_rss, sample_rss = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def rate(path, counter):
    b = [x for x in json.load(open(path))["benchmarks"] if x.get("run_type", "iteration") == "iteration"]
    return b[0][counter], b[0]["real_time"]
lt, lt_ms = rate(f"{tmp}/train.json", "tokens/s")
ls, ls_ms = rate(f"{tmp}/sample.json", "new_tokens/s")
tt = json.load(open(f"{tmp}/torch_train.json"))
ts = json.load(open(f"{tmp}/torch_sample.json"))
print(f"training step (B=8, T=256): leap {lt:9.0f} tok/s ({lt_ms:7.1f} ms)   torch {tt['train_tokens_per_s']:9.0f} tok/s "
      f"({tt['train_step_ms']:7.1f} ms)   ratio {lt / tt['train_tokens_per_s']:.2f}x  (target >= 1.5x)")
print(f"KV-cache sampling (8 x 224): leap {ls:9.0f} tok/s ({ls_ms:7.1f} ms)   torch {ts['sample_new_tokens_per_s']:9.0f} tok/s "
      f"({ts['sample_ms']:7.1f} ms)   ratio {ls / ts['sample_new_tokens_per_s']:.2f}x  (target >= 2x)")
print(f"peak RSS: leap train {train_rss:.0f} MiB, sample {sample_rss:.0f} MiB; torch train {tt['peak_rss_mib']:.0f} MiB, "
      f"sample {ts['peak_rss_mib']:.0f} MiB")
PY
