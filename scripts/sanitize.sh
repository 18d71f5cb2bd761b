#!/usr/bin/env bash
# Sanitizer runs (README, "Sanitizers"): the unit tests and the MPI tests under AddressSanitizer
# with UndefinedBehaviorSanitizer (build-asan/), then the worker-pool and messaging tests under
# ThreadSanitizer (build-tsan/). Each build configures LEAP_SANITIZE (cmake/sanitizers.cmake)
# and builds only the programs its tests run. Exits non-zero when a build fails or a test fails,
# and a sanitizer finding fails its test (UBSan and TSan halt on the first; ASan always does).
# usage: scripts/sanitize.sh [address|thread|all]        (default all)
# Environment: LEAP_CUDA_ARCHS (default 90), LEAP_JOBS (build jobs; default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
export PATH="$PATH:/usr/local/cuda/bin"
which="${1:-all}"
jobs="${LEAP_JOBS:-$(nproc)}"
supp="$src/tests/sanitizers"

# -O1 -g: readable stacks at a bearable speed; assertions stay on (no NDEBUG).
configure() {  # DIR SANITIZER
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CUDA_ARCHITECTURES="${LEAP_CUDA_ARCHS:-90}" \
    -DLEAP_SANITIZE="$2" -DLEAP_WERROR="${LEAP_WERROR:-OFF}" >/dev/null
}

# The build targets behind the ctest entries that ctest ARGS select, plus EXTRA targets.
build_for_tests() {  # DIR "CTEST ARGS" EXTRA...
  local dir="$1" args="$2"; shift 2
  local targets=("$@") all name
  all=$(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \([A-Za-z0-9_]*\).*/\1/p')
  for name in $(cd "$dir" && ctest -N $args | sed -n 's/^ *Test *#[0-9]*: *//p'); do
    grep -qx "$name" <<<"$all" && targets+=("$name")
  done
  echo "[sanitize] building in $dir: ${targets[*]}"
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
}

# LeakSanitizer stops the process with ptrace to read its threads; where ptrace is not allowed
# (some containers) it dies with a fatal error instead of reporting. Probe once with a real leak.
leaks_checkable() {
  local probe; probe=$(mktemp -d)
  printf '#include <stdlib.h>\nint main(void) { void* volatile p = malloc(7); p = 0; return 0; }\n' >"$probe/leak.c"
  cc -fsanitize=address -g "$probe/leak.c" -o "$probe/leak" 2>/dev/null || { rm -rf "$probe"; return 1; }
  local out; out=$(ASAN_OPTIONS=detect_leaks=1 "$probe/leak" 2>&1 || true)
  rm -rf "$probe"
  grep -q "detected memory leaks" <<<"$out"
}

run_address() {
  local dir=build-asan
  configure "$dir" address
  # Unit tests (not the GPU ones: without a device they skip, and the CUDA runtime is not ours)
  # and the MPI GoogleTest programs; test_workers_pool and test_check_cli need `leap` itself.
  local unit="-L unit -LE gpu" mpi="-R _mpi$"
  build_for_tests "$dir" "$unit" leap test_skip_main_cases
  build_for_tests "$dir" "$mpi"
  local leaks=1
  if ! leaks_checkable; then
    leaks=0
    echo "[sanitize] LeakSanitizer cannot run here (no ptrace): leak checking is OFF for this run"
  fi
  export ASAN_OPTIONS="detect_leaks=$leaks:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  (cd "$dir" && ctest --output-on-failure --timeout 1800 $unit)
  # Open MPI unloads its components (dlclose) in MPI_Finalize, so LSan sees their allocations as
  # coming from unknown modules that no suppression can name: the MPI tests run without leak
  # checking (memory errors and UBSan still fail them).
  (cd "$dir" && ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" \
     ctest --output-on-failure --timeout 1800 $mpi)
}

run_thread() {
  local dir=build-tsan
  configure "$dir" thread
  # The pool's supervisor threads, the sandbox service's queue, and MPI messaging.
  local tests="-R ^(test_workers_pool|test_topology|test_messages_mpi)$"
  build_for_tests "$dir" "$tests" leap
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  (cd "$dir" && ctest --output-on-failure --timeout 1800 $tests)
}

case "$which" in
  address) run_address ;;
  thread) run_thread ;;
  all) run_address; run_thread ;;
  *) echo "usage: scripts/sanitize.sh [address|thread|all]" >&2; exit 2 ;;
esac
echo "[sanitize] $which: clean"
