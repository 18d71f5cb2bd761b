#!/usr/bin/env bash
# mpirun for a single machine (a workstation, a container, CI): adds only what this machine needs.
#  - as root (containers), Open MPI refuses to start without OMPI_ALLOW_RUN_AS_ROOT*;
#  - with more ranks than cores it needs --oversubscribe, and idle ranks should yield the core
#    (mpi_yield_when_idle) and OpenBLAS should run one thread per rank;
#  - for `leap`, OPENBLAS_CORETYPE when OpenBLAS would pick pre-AVX2 kernels for this CPU.
# Cluster jobscripts call plain `mpirun` and need none of the rest; the CPU ones set
# OPENBLAS_CORETYPE the same way.
# usage: scripts/mpirun_local.sh NP COMMAND [ARGS...]
set -euo pipefail
np="$1"; shift
extra=()
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Open MPI gives a machine one slot per physical core it may use (not per hardware thread, which
# nproc counts): on a 4-vCPU VM of 2 hyperthreaded cores, 4 ranks need --oversubscribe.
# shellcheck source=scripts/cpu_count.sh
source "$(dirname -- "$(readlink -f -- "$0")")/cpu_count.sh"
cores=$(leap_physical_cores)
[ "${cores:-0}" -gt 0 ] || cores=$(nproc)
if [ "$np" -gt "$cores" ]; then
  extra+=(--oversubscribe --mca mpi_yield_when_idle 1)
  export OPENBLAS_NUM_THREADS=1
fi
# OpenBLAS's kernels for this CPU, when its own choice wastes it (openblas_coretype.sh).
if [ "$(basename -- "${1:-}")" = leap ]; then
  # shellcheck source=scripts/openblas_coretype.sh
  source "$(dirname -- "$(readlink -f -- "$0")")/openblas_coretype.sh"
  leap_export_openblas_coretype "$1"
fi
# Containers often lack a usable high-speed fabric; keep shared memory and loopback TCP.
extra+=(--mca btl self,vader,tcp --mca btl_tcp_if_include lo)
exec mpirun -np "$np" "${extra[@]}" "$@"
