#!/usr/bin/env bash
# Configures and builds LEAP into build/ (CUDA sources compiled when nvcc is found).
# Environment: LEAP_BUILD_DIR (default build), LEAP_CUDA_ARCHS (default 90 here, to keep the
# compile short; clusters build the CMake default "80;90"), LEAP_WERROR (CI sets ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${LEAP_BUILD_DIR:-build}"
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${LEAP_CUDA_ARCHS:-90}" -DLEAP_WERROR="${LEAP_WERROR:-OFF}" >/dev/null
cmake --build "$build" -j "$(nproc)"
