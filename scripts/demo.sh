#!/usr/bin/env bash
# The README's run command: install what is missing, build, and run the CPU demo under mpirun
# (configs/demo.ini: 2 policy + 2 sandbox ranks). Each run gets its own folder under runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_deps.sh
scripts/build.sh
out="runs/demo-$(date +%Y%m%d-%H%M%S)"
scripts/mpirun_local.sh 4 build/src/apps/leap train --config configs/demo.ini --run.out_dir "$out" "$@"
echo "trajectories: $out/trajectories.h5 (tables: build/src/apps/leap analyze $out; pandas: tools/leap_trajectories.py)"
