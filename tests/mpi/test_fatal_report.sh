#!/usr/bin/env bash
# Errors reach rank 0: a fatal error on rank 1 ends a 4-rank job, with rank 0 naming rank 1's
# message when rank 0 was waiting for a message, and by rank 1's own abort when rank 0 was stuck
# in a collective. Either way the job ends (ctest's timeout would catch a hang) with a non-zero
# exit and the message on the job's output.
set -u
source "$LEAP_SOURCE_DIR/tests/cli/check_lib.sh"
run() { timeout 120 "$LEAP_SOURCE_DIR/scripts/mpirun_local.sh" 4 "$FATAL_MAIN" "$@"; }
check rank0-reports-rank1 1 "rank 0 stops the job: rank 1 on .* exploded on purpose" -- run recv
check rank1-aborts-alone 1 "FATAL rank 1 on .*fatal_report_main.cpp:[0-9]+: sandbox engine exploded on purpose" -- run barrier
exit $fail
