#!/usr/bin/env bash
# The README's run command: install what is missing, build, and run the CPU demo under mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_deps.sh
scripts/build.sh
scripts/mpirun_local.sh 4 build/src/apps/leap train --config configs/demo.ini "$@"
