#!/usr/bin/env bash
# scripts/stage_gpu_deps.sh [DIR] — copy the GPU-only build's small host dependencies from this
# machine into DIR (default build-gpu-deps/), for a GPU machine that lacks the development
# packages and cannot install them (a compute node without apt, a container with only the CUDA
# toolkit and PyTorch).
#
# The GPU-only build (cmake/gpu_only.cmake) needs fmt, and for its model and sandbox tiers
# nlohmann_json and Boost.program_options. PyTorch's wheel does not reliably ship any of them
# (fmt was dropped from it with fmt 12; nlohmann never was shipped), so without them the train,
# decode and executor checks would not even build. This stages:
#   DIR/include/fmt, DIR/include/nlohmann       header-only libraries, whole;
#   DIR/include/boost/...                       the headers boost/program_options.hpp includes,
#                                               as this machine's compiler resolves them, plus
#                                               boost/config/ whole (other compilers and
#                                               standard libraries take other branches there);
#   DIR/lib/libboost_program_options.a          the static library, so nothing is needed at run
#                                               time;
#   DIR/include/seccomp*.h, DIR/lib/libseccomp.a the sandbox workers' system-call filter.
# A few MB in all. Copy DIR to the GPU machine next to the checkout; benchmarks/gpu_check.sh
# uses build-gpu-deps/ when it exists (or $LEAP_GPU_DEPS), and cmake takes -DLEAP_GPU_DEPS=DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/build-gpu-deps}"
INC=/usr/include
LIBDIR=$(dirname "$(g++ -print-file-name=libboost_program_options.a)")

for need in "$INC/fmt/format.h" "$INC/nlohmann/json.hpp" "$INC/boost/program_options.hpp" \
            "$LIBDIR/libboost_program_options.a" "$INC/seccomp.h" "$LIBDIR/libseccomp.a"; do
  if [[ ! -e "$need" ]]; then
    echo "stage_gpu_deps: $need not found; run scripts/setup_deps.sh on this machine first" >&2
    exit 2
  fi
done

# Into a temporary folder renamed into place, so that a half-copied DIR is never used.
tmp="$DIR.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/lib"
cp -r "$INC/fmt" "$INC/nlohmann" "$tmp/include/"

# The include closure of boost/program_options.hpp under this compiler, as g++ -M reports it.
probe="$tmp/probe.cpp"
echo '#include <boost/program_options.hpp>' > "$probe"
g++ -std=c++20 -M "$probe" | tr ' \\' '\n\n' | grep "^$INC/boost/" | sort -u |
  while read -r header; do
    rel="${header#"$INC"/}"
    mkdir -p "$tmp/include/$(dirname "$rel")"
    cp "$header" "$tmp/include/$rel"
  done
rm "$probe"
cp -r "$INC/boost/config" "$tmp/include/boost/"
cp "$LIBDIR/libboost_program_options.a" "$LIBDIR/libseccomp.a" "$tmp/lib/"
cp "$INC"/seccomp*.h "$tmp/include/"

rm -rf "$DIR"
mv "$tmp" "$DIR"
trap - EXIT
echo "staged into $DIR: $(find "$DIR" -type f | wc -l) files, $(du -sh "$DIR" | cut -f1)"
