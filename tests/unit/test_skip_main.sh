#!/usr/bin/env bash
# The exit codes of tests/gtest_skip_main.cpp, through $CASES (tests/unit/skip_main_cases.cpp):
# all skipped -> 77 (ctest: skipped); a failure next to skips -> 1 (never hidden as a skip);
# some passed, some skipped -> 0; a failure next to a pass -> 1.
set -u
fail=0
expect() {
  local want=$1; shift
  "$@" >/dev/null 2>&1
  local got=$?
  if [ "$got" = "$want" ]; then echo "ok   exit $got: $*"; else echo "FAIL exit $got, wanted $want: $*"; fail=1; fi
}
expect 77 "$CASES" --gtest_filter='Skipped.*'
expect 0 "$CASES" --gtest_filter='Skipped.*:Passes.*'
expect 1 env LEAP_SKIP_MAIN_FAIL=1 "$CASES" --gtest_filter='Skipped.*:FailsOnRequest.*'
expect 1 env LEAP_SKIP_MAIN_FAIL=1 "$CASES" --gtest_filter='Passes.*:FailsOnRequest.*'
exit $fail
