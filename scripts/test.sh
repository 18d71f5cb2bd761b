#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test (unit, MPI under
# mpirun -np 4, CLI, golden tests against PyTorch) and print ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_deps.sh
scripts/build.sh
cd "${LEAP_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 --timeout 900 "$@"
