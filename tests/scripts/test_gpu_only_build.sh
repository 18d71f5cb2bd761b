#!/usr/bin/env bash
# The GPU-only build as a GPU machine makes it (benchmarks/gpu_check.sh), so its link errors show
# here and not first on the GPU: dependencies staged by scripts/stage_gpu_deps.sh, the system's
# fmt, nlohmann_json and Boost hidden from CMake, -DLEAP_GPU_ONLY=ON for sm_90, only
# leap_gpu_check built. One difference: host code is compiled at -O0, not Release's -O2. That
# takes about 40% less time, and it finds at least the link errors -O2 would, since an
# unoptimised build emits every inline function it uses (the sandbox-tier and model-tier sources
# compile at -O2 under -Werror in the main build). Then:
#  - every tier is on (the staged folder carries what the model and sandbox tiers need);
#  - no fmt, nlohmann or Boost header was read from outside the staged folder;
#  - the binary needs no Boost, fmt, MPI or shared CUDA runtime (one static runtime);
#  - `leap_gpu_check info` reports "no device" and exits 0 on this GPU-less machine, and a
#    check of a tier that is built but cannot run (no device) is SKIPPED (exit 3).
# Environment: LEAP_SOURCE_DIR; LEAP_GPU_BUILD_JOBS (default: every core); the compiler
# launchers of the environment (ccache) are used when set.
set -euo pipefail
ROOT="${LEAP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
export PATH="$PATH:/usr/local/cuda/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v nvcc > /dev/null || { echo "SKIPPED: no nvcc (the GPU-only build needs the CUDA toolkit)"; exit 0; }

t0=$(date +%s)
deps="$tmp/deps"
"$ROOT/scripts/stage_gpu_deps.sh" "$deps" > "$tmp/stage.log" || fail "staging: $(cat "$tmp/stage.log")"

build="$tmp/build"
# Hiding the packages from CMake is what a GPU machine without them looks like to
# cmake/gpu_only.cmake; the compiler still searches /usr/include last, which the dependency
# files below check.
cmake -S "$ROOT" -B "$build" -DLEAP_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS=-O0 -DCMAKE_CUDA_FLAGS=-O0 -DCMAKE_CUDA_ARCHITECTURES=90 -DLEAP_WERROR=ON -DLEAP_GPU_DEPS="$deps" \
  -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON > "$tmp/configure.log" 2>&1 ||
  fail "configure: $(tail -n 20 "$tmp/configure.log")"
grep -q "model tier ON.*sandbox tier ON" "$tmp/configure.log" ||
  fail "not every tier is on: $(grep LEAP_GPU_ONLY "$tmp/configure.log")"
t1=$(date +%s)
cmake --build "$build" -j "${LEAP_GPU_BUILD_JOBS:-$(nproc)}" --target leap_gpu_check \
  > "$tmp/build.log" 2>&1 || fail "build: $(grep -m 20 -E 'error|undefined' "$tmp/build.log")"
t2=$(date +%s)

# Every fmt, nlohmann or Boost header a compile read lies under the staged folder.
depfiles=$(find "$build" -name '*.d' | wc -l)
(( depfiles > 10 )) || fail "only $depfiles dependency files: the check below would see nothing"
leaked=$(find "$build" -name '*.d' -print0 | xargs -0 cat | tr ' \\' '\n\n' |
         grep -E '/(fmt|nlohmann|boost)/' | grep -v "^$deps/" | sort -u || true)
[[ -z "$leaked" ]] || fail "headers read from outside the staged folder: $(echo "$leaked" | head -n 5)"

bin="$build/cuda/leap_gpu_check"
needed=$(readelf -d "$bin" | grep NEEDED || true)
for lib in boost fmt mpi libcudart; do
  ! grep -q "$lib" <<<"$needed" || fail "leap_gpu_check needs $lib at run time: $(grep "$lib" <<<"$needed")"
done

set +e
out=$("$bin" info 2> "$tmp/info.err"); rc=$?
set -e
[[ $rc == 0 ]] || fail "leap_gpu_check info exited $rc: $(cat "$tmp/info.err")"
grep -q '"devices": *0' <<<"$out" || fail "info did not report 0 devices: $out"
grep -qi "none\|no device\|no CUDA" <<<"$out$(cat "$tmp/info.err")" || fail "info gave no reason: $out"
set +e
"$bin" train > /dev/null 2> "$tmp/train.err"; rc=$?
set -e
[[ $rc == 3 ]] || fail "train without a device exited $rc, not 3 (SKIPPED): $(cat "$tmp/train.err")"
echo "PASS: GPU-only build from staged dependencies: configure $((t1 - t0)) s (with staging)," \
     "build $((t2 - t1)) s; info: $(head -n 1 "$tmp/info.err")"
