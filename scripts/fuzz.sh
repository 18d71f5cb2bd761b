#!/usr/bin/env bash
# Fuzzes every parser of untrusted or semi-trusted input (fuzz/README.md). Installs clang and
# libFuzzer when missing, builds the fuzz targets into build-fuzz/ (ASan + UBSan), replays every
# input kept under fuzz/regressions/<target>/, then runs each target for SECONDS (default 60) on
# a scratch copy of its seed corpus fuzz/corpus/<target>/ (the committed corpus is never
# written). Prints each target's execs/s and coverage; exits 1 when any input crashed, leaked or
# hit undefined behaviour (the input is left in build-fuzz/fuzz-run/<target>/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: answer suite safetensors config wire ptx)
# Environment: LEAP_FUZZ_BUILD_DIR (default build-fuzz), LEAP_FUZZ_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(answer suite safetensors config wire ptx)
build="${LEAP_FUZZ_BUILD_DIR:-build-fuzz}"

# The project's packages, then clang with libFuzzer and the sanitizer runtimes (libclang-rt) and
# clang's OpenMP (the configure step finds OpenMP for the CPU backend even though no fuzz target
# links it).
scripts/setup_deps.sh clang libclang-rt-dev libomp-dev

export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$build" -DLEAP_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES="${LEAP_CUDA_ARCHS:-90}" >/dev/null
cmake --build "$build" -j "${LEAP_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
run_dir="$build/fuzz-run"
failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  work="$run_dir/$t"
  rm -rf "$work" && mkdir -p "$work/corpus"
  # 1. Every input that once crashed this target must now pass (one run each, no mutation).
  regressions=(fuzz/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! "$bin" "${regressions[@]}" >"$work/regressions.log" 2>&1; then
      echo "[fuzz] $t: a regression input fails again (see $work/regressions.log)"
      failed+=("$t")
      continue
    fi
    echo "[fuzz] $t: ${#regressions[@]} regression inputs pass"
  fi
  # 2. Fuzz a scratch copy of the seed corpus.
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  seeds=$(ls "$work/corpus" | wc -l)
  echo "[fuzz] $t: fuzzing for ${seconds}s from $seeds seeds"
  if ! "$bin" "$work/corpus" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$work/" >"$work/fuzz.log" 2>&1; then
    echo "[fuzz] $t: FAILED, the input is in $work/ (log: $work/fuzz.log)"
    grep -m3 -E "ERROR: |runtime error:" "$work/fuzz.log" || true
    failed+=("$t")
  fi
  # libFuzzer's own lines: "#N<TAB>INITED cov: C ft: F ..." once the seeds have run, and the
  # last "#N<TAB>DONE cov: ..." (or whichever line with cov: came last).
  start=$(grep -m1 -E "^#[0-9]+[[:space:]]+INITED" "$work/fuzz.log" | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/' || true)
  end=$(grep -E "^#[0-9]+[[:space:]].*cov: " "$work/fuzz.log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\1 \2 \3/' || true)
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$work/fuzz.log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$work/fuzz.log")
  read -r cov0 ft0 <<<"${start:-? ?}"
  read -r cov1 ft1 corp <<<"${end:-? ? ?}"
  summary+=("$(printf '%-12s %10s %9s %7s -> %-7s %7s -> %-7s %5s -> %-5s' "$t" "${execs:-?}" \
               "${rate:-?}" "$cov0" "$cov1" "$ft0" "$ft1" "$seeds" "$corp")")
done

echo
printf '%-12s %10s %9s %18s %18s %14s\n' target execs execs/s "cov (edges)" "ft (features)" corpus
for line in "${summary[@]}"; do echo "$line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "[fuzz] failed: ${failed[*]}"
  exit 1
fi
echo "[fuzz] no crash in ${#targets[@]} targets (${seconds}s each)"
