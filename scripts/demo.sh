#!/usr/bin/env bash
# The README's run command: install what is missing, build, and run the CPU demo under mpirun
# (configs/demo.ini: 2 policy + 2 sandbox ranks). Each run gets its own folder under runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_deps.sh
scripts/build.sh
out="runs/demo-$(date +%Y%m%d-%H%M%S)"
scripts/mpirun_local.sh 4 build/src/apps/leap train --config configs/demo.ini --run.out_dir "$out" "$@"
# runs/demo: the newest demo run, the folder the README's examples read (a folder of that name
# that is not a link, from a run started by hand, is left alone).
if [ ! -e runs/demo ] || [ -L runs/demo ]; then ln -sfn "$(basename "$out")" runs/demo; fi
echo "trajectories: $out/trajectories.h5, also runs/demo (tables: build/src/apps/leap analyze runs/demo; pandas: tools/leap_trajectories.py)"
