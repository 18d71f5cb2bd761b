#!/usr/bin/env bash
# Installs what LEAP needs from Debian's packages, quick when everything is already there, and
# checks for the CUDA toolkit, which Debian does not ship: without it, it says how to get it and
# exits 1 (LEAP_ALLOW_NO_CUDA=1 goes on without it).
# Used by both README commands and by CI. Run as root (or with sudo available).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git
      libopenmpi-dev openmpi-bin libhdf5-dev libboost-program-options-dev libopenblas-dev
      nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev
      libseccomp-dev strace
      libpcre2-dev libutf8proc-dev xz-utils  # the tokenizer: Split regexes (PCRE2 JIT), NFC, fixtures
      python3-torch python3-h5py python3-numpy python3-matplotlib python3-pandas
      slurm-wlm munge)  # Slurm and munge: the one-node Slurm integration test (tests/slurm)
# usage: scripts/setup_deps.sh [--dev] [EXTRA_PACKAGE ...]
# --dev: what only developers need, never CI: python3-jinja2 renders the chat-template goldens
# (tests/chat/make_goldens.py); CI reads the committed goldens. Extra packages are installed the
# same way (scripts/fuzz.sh adds clang and its libFuzzer runtime).
for a in "$@"; do
  if [ "$a" = "--dev" ]; then pkgs+=(python3-jinja2); else pkgs+=("$a"); fi
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit is not a Debian package: NVIDIA ships it. The build needs its nvcc and NVRTC
# even on machines without a GPU (the sandbox compiles candidates with NVRTC and runs the PTX in
# its interpreter). Found as CMake finds it: nvcc on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin.
nvcc_found=""
for d in ${PATH//:/ } "${CUDA_HOME:-/nonexistent}/bin" /usr/local/cuda/bin; do
  [ -x "$d/nvcc" ] && { nvcc_found="$d/nvcc"; break; }
done
if [ -z "$nvcc_found" ]; then
  cat >&2 <<'MSG'
[setup] The CUDA toolkit (nvcc and NVRTC) was not found on PATH, in $CUDA_HOME/bin or in
[setup] /usr/local/cuda/bin. LEAP is tested with CUDA 13.0. Install it from NVIDIA's Debian 12
[setup] repository (no GPU or driver is needed to build and run on the CPU):
[setup]   wget https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb
[setup]   sudo dpkg -i cuda-keyring_1.1-1_all.deb && sudo apt-get update
[setup]   sudo apt-get install cuda-toolkit-13-0     # installs /usr/local/cuda-13.0, /usr/local/cuda
[setup] or put an existing toolkit's bin/ on PATH (or set CUDA_HOME), then run this again.
[setup] Without it the build has no NVRTC: the sandbox cannot compile any kernel, so the demo
[setup] and `leap train` stop at startup, and the tests that compile kernels report *skipped*.
[setup] To build without it anyway: LEAP_ALLOW_NO_CUDA=1 scripts/setup_deps.sh (or scripts/test.sh).
MSG
  [ "${LEAP_ALLOW_NO_CUDA:-0}" = 1 ] || exit 1
  echo "[setup] LEAP_ALLOW_NO_CUDA=1: going on without the CUDA toolkit" >&2
fi
