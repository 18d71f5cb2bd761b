#!/usr/bin/env bash
# Installs what LEAP needs from Debian's packages; quick when everything is already there.
# Used by both README commands and by CI. Run as root (or with sudo available).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git
      libopenmpi-dev openmpi-bin libhdf5-dev libboost-program-options-dev libopenblas-dev
      nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev
      libseccomp-dev strace
      libpcre2-dev libutf8proc-dev xz-utils  # the tokenizer: Split regexes (PCRE2 JIT), NFC, fixtures
      python3-torch python3-h5py python3-numpy python3-matplotlib python3-pandas
      slurm-wlm munge)  # Slurm and munge: the one-node Slurm integration test (tests/slurm)
# --dev: what only developers need, never CI: python3-jinja2 renders the chat-template goldens
# (tests/chat/make_goldens.py); CI reads the committed goldens.
if [ "${1:-}" = "--dev" ]; then
  pkgs+=(python3-jinja2)
fi
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
