#!/usr/bin/env bash
# The `leap` command as a user meets it: help, version and device detection, and bad input
# exiting 2 with a message that names the problem. Run by ctest with LEAP set to the binary.
set -u
source "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check help 0 "subcommands:" -- "$LEAP" --help
check no-args 2 "usage: leap" -- "$LEAP"
check unknown-sub 2 "unknown subcommand 'trian'" -- "$LEAP" trian
# With no visible device (and on machines without a driver) the binary starts and says so.
check version-no-device 0 "device: none" -- env CUDA_VISIBLE_DEVICES= "$LEAP" --version
# Binaries never link the driver (libcuda): they must start on machines without one.
if ldd "$LEAP" | grep -q 'libcuda\.so'; then echo "FAIL leap links libcuda"; ldd "$LEAP" | grep libcuda; fail=1
else echo "ok   no-libcuda-link"; fi
if ldd "$LEAP" | grep -q libcudart; then
  check version-libraries 0 "libraries: CUDA runtime [0-9.]+, cuBLASLt [0-9.]+, NCCL [0-9.]+" -- "$LEAP" --version
fi
# The commit is the source tree's at build time (cmake/version_header.cmake refreshes it at every
# build), not the one the build folder was configured at: trajectories and eval reports carry it.
if head=$(git -C "$(dirname "$0")/../.." rev-parse --short=12 HEAD 2>/dev/null); then
  check version-commit-is-head 0 "commit $head(-dirty)?\)" -- "$LEAP" --version
else
  check version-commit 0 "commit unknown" -- "$LEAP" --version
fi
check train-help 0 "--mpi.sandbox_ranks" -- "$LEAP" train --help
check print-config 0 "^\[mpi\]" -- "$LEAP" train --print-config --mpi.sandbox_ranks=1
check print-config-value 0 "sandbox_ranks = 3" -- "$LEAP" train --print-config --mpi.sandbox_ranks=3

printf '[mpi]\nsandbox_rank = 2\n' > "$tmp/typo.ini"
check typo-key 2 "typo.ini:2: unknown key 'sandbox_rank'.*mpi.sandbox_ranks" -- "$LEAP" train --config "$tmp/typo.ini"
check bad-flag 2 "did you mean '--mpi.sandbox_ranks'" -- "$LEAP" train --mpi.sandbox_rank=1
check bad-type 2 "sandbox_ranks" -- "$LEAP" train --mpi.sandbox_ranks=two
check bad-range 2 "must be >= 0" -- "$LEAP" train --mpi.sandbox_ranks=-1
check bad-choice 2 "one of cpu\|cuda" -- "$LEAP" train --backend.name=tpu
check missing-config 2 "cannot open config file" -- "$LEAP" train --config "$tmp/nope.ini"
check bad-pipeline 2 "rl.pipeline.*one of stream\|sync" -- "$LEAP" train --rl.pipeline=async
# The benchmark-only sandbox latency never reaches an evaluation's results.
check eval-simulated-latency 2 "sandbox.simulated_exec_ms' = 50 .*leap eval refuses it" -- "$LEAP" eval --model nope --suite nope --sandbox.simulated_exec_ms=50
# A temperature between 0 (greedy) and 1e-3: 1/T would leave the float range well before 0.
check train-tiny-temperature 2 "sampler.temperature' = 1e-05 is below 0.001: use 0 for greedy" -- "$LEAP" train --sampler.temperature=1e-5
check eval-tiny-temperature 2 "sampler.temperature' = 1e-40 is below 0.001" -- "$LEAP" eval --model nope --suite nope --sampler.temperature=1e-40
# --print-config refuses what the command would refuse (checks across options included).
check print-config-cross 2 "sampler.temperature' = 1e-05 is below 0.001" -- "$LEAP" train --print-config --sampler.temperature=1e-5
check print-config-eval-cross 2 "leap eval refuses it" -- "$LEAP" eval --print-config --sandbox.simulated_exec_ms=50
# AdamW and its schedule: values that give NaN weights or a decay that never runs or rises.
check optim-eps-zero 2 "optim.eps" -- "$LEAP" train --optim.eps=0
check optim-beta-one 2 "optim.beta2" -- "$LEAP" train --optim.beta2=1
check optim-min-lr 2 "optim.min_lr' = 0.001 is above 'optim.lr' = 1e-05" -- "$LEAP" train --optim.min_lr=1e-3
check optim-warmup 2 "optim.warmup_steps' = 10 is not below 'optim.total_steps' = 10" -- "$LEAP" train --optim.warmup_steps=10 --optim.total_steps=10
# A sandbox timeout past a day (far larger ones overflowed the deadline: every job timed out).
check sandbox-timeout-max 2 "sandbox.run_timeout_s" -- "$LEAP" train --sandbox.run_timeout_s=1e12
# A decoding batch past any KV cache (a huge one overflowed the block count mid-step).
check sampler-batch-max 2 "sampler.batch_seqs" -- "$LEAP" train --sampler.batch_seqs=100000000
# Static DCP thresholds with no failure count between easy and hopeless: no debugging turn ever.
check dcp-no-gap 2 "no group would ever get a debugging turn" -- "$LEAP" train --dcp.easy_below=0.7 --dcp.hopeless_at=0.7
# ... which only RL training uses: SFT and eval take such thresholds (a shared config) as they are.
check dcp-no-gap-eval 0 "easy_below = 0.7" -- "$LEAP" eval --print-config --dcp.easy_below=0.7 --dcp.hopeless_at=0.7
check dcp-no-gap-sft 0 "easy_below = 0.7" -- "$LEAP" train --mode sft --print-config --dcp.easy_below=0.7 --dcp.hopeless_at=0.7
# Nothing is written when the config is bad.
[ -z "$(ls -A "$tmp" | grep -v typo.ini)" ] || { echo "FAIL: files written on bad config"; fail=1; }

# `leap env`: OpenBLAS's kernels against the CPU's flags (read here from /proc/cpuinfo), and the
# launch script exporting the fix when OpenBLAS's own choice predates AVX2.
check env-report 0 "openblas: [A-Za-z0-9]+ kernels" -- "$LEAP" env
check env-bad-flag 2 "unknown" -- "$LEAP" env --bogus
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
want=""
if grep -qw avx2 <<<"$flags" && grep -qw fma <<<"$flags"; then
  want=Haswell; grep -qw avx512f <<<"$flags" && want=SkylakeX
fi
if [ -z "$flags" ]; then
  echo "skip env-coretype: no /proc/cpuinfo flags"
elif ! OPENBLAS_CORETYPE=Prescott "$LEAP" env | grep -q "^openblas: Prescott kernels"; then
  echo "skip env-coretype: this OpenBLAS does not honour OPENBLAS_CORETYPE (not a DYNAMIC_ARCH build)"
else
  got=$(OPENBLAS_CORETYPE=Prescott "$LEAP" env --openblas-coretype)
  if [ "$got" = "$want" ]; then echo "ok   env-coretype: SSE3 kernels forced, fix '$got'"
  else echo "FAIL env-coretype: SSE3 kernels forced, fix '$got', wanted '$want'"; fail=1; fi
fi
if [ -n "$want" ]; then
  check env-coretype-avx2 0 "^$" -- env OPENBLAS_CORETYPE=Haswell "$LEAP" env --openblas-coretype
  # Without a choice of the caller's, the ranks mpirun_local.sh starts need no fix (their kernels
  # pass the check env-coretype tested above); with one, they keep it.
  out=$(env -u OPENBLAS_CORETYPE "$LEAP_SOURCE_DIR/scripts/mpirun_local.sh" 1 "$LEAP" env --openblas-coretype 2>/dev/null)
  rc=$?
  if [ "$rc" = 0 ] && [ -z "$out" ]; then echo "ok   env-mpirun-local: the ranks need no fix"
  else echo "FAIL env-mpirun-local: exit $rc, the ranks still need OPENBLAS_CORETYPE='$out'"; fail=1; fi
  check env-mpirun-local-caller 0 "^openblas: Prescott kernels \(OPENBLAS_CORETYPE Prescott\)" -- \
    env OPENBLAS_CORETYPE=Prescott "$LEAP_SOURCE_DIR/scripts/mpirun_local.sh" 1 "$LEAP" env
else
  echo "skip env-coretype-avx2, env-mpirun-local, env-mpirun-local-caller: this CPU has no AVX2 and FMA"
fi

# The launchers' helper, with stand-ins for the binary: it exports what the binary answers, keeps a
# caller's value, and never stops a `set -euo pipefail` launcher when the binary is missing,
# fails or answers nothing.
printf '#!/bin/sh\necho Haswell\n' > "$tmp/says_haswell"
printf '#!/bin/sh\nexit 1\n' > "$tmp/fails"
printf '#!/bin/sh\necho\n' > "$tmp/says_nothing"
chmod +x "$tmp/says_haswell" "$tmp/fails" "$tmp/says_nothing"
helper_case() {  # helper_case NAME CALLER_VALUE BINARY WANTED
  local got
  got=$(env -u OPENBLAS_CORETYPE ${2:+OPENBLAS_CORETYPE=$2} bash -c 'set -euo pipefail
    source "$1"; leap_export_openblas_coretype "$2"; echo "rc0 ${OPENBLAS_CORETYPE:-unset}"' \
    helper "$LEAP_SOURCE_DIR/scripts/openblas_coretype.sh" "$3" 2>/dev/null)
  if [ "$got" = "rc0 $4" ]; then echo "ok   helper-$1"; else echo "FAIL helper-$1: '$got', wanted 'rc0 $4'"; fail=1; fi
}
helper_case exports "" "$tmp/says_haswell" Haswell
helper_case keeps-caller SkylakeX "$tmp/says_haswell" SkylakeX
helper_case missing-binary "" "$tmp/no_such_leap" unset
helper_case binary-fails "" "$tmp/fails" unset
helper_case no-answer "" "$tmp/says_nothing" unset

# `leap layout`: where every rank goes, before a job is queued.
check layout-table 0 "6 +0 +6 +sandbox +0 +gpu6 +package 1" -- "$LEAP" layout --nodes 1 --gpus-per-node 8 --ranks-per-node 8 --mpi.sandbox_per_node 2 --backend.name cuda
check layout-shared-gpu 0 "warning: sandbox rank 8 times kernels on GPU 0 of node 0, which policy rank 0 trains on" -- "$LEAP" layout --gpus-per-node 8 --ranks-per-node 10 --backend.name cuda --mpi.sandbox_per_node 3 --sandbox.device gpu
check layout-too-many 2 "one GPU per policy rank" -- "$LEAP" layout --nodes 2 --gpus-per-node 4 --ranks-per-node 8 --backend.name cuda
out=$("$LEAP" layout --nodes 2 --gpus-per-node 8 --ranks-per-node 8 --mpi.sandbox_per_node 2 --backend.name cuda --format json)
if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=d["ranks"]; assert len(r)==16 and r[15]["gpu"]==7 and r[15]["role"]=="sandbox" and r[8]["node"]==1 and len({(x["node"],x["gpu"]) for x in r})==16' "$out"; then
  echo "ok   layout-json"
else
  echo "FAIL layout-json: $out"; fail=1
fi

if [ "$fail" = 0 ]; then echo "all CLI checks passed"; fi
exit $fail
