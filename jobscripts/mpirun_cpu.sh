#!/usr/bin/env bash
# A plain mpirun launcher for a CPU-only node or workstation: NP ranks of `leap train`, the
# last SANDBOX of them verifying kernels in the PTX interpreter. Nothing here is specific to a
# container; on a single laptop-class machine prefer scripts/mpirun_local.sh, which also handles
# running as root and oversubscribed cores.
# usage: jobscripts/mpirun_cpu.sh NP SANDBOX CONFIG.ini [--section.key=value ...]
set -euo pipefail
np="$1"; sandbox="$2"; config="$3"; shift 3
here="$(cd "$(dirname "$0")/.." && pwd)"
# One OpenBLAS thread per rank: the CPU backend runs its own OpenMP pool (backend.threads).
export OPENBLAS_NUM_THREADS=1
# Shared file systems (Lustre, GPFS, NFS) often lack the locks HDF5 takes by default.
export HDF5_USE_FILE_LOCKING="${HDF5_USE_FILE_LOCKING:-FALSE}"
# Each rank on its own cores (cpu_count.sh); the ranks size their thread pools from them.
# shellcheck source=scripts/cpu_count.sh
source "$here/scripts/cpu_count.sh"
# OpenBLAS's kernels for this CPU, when its own choice predates AVX2 (scripts/openblas_coretype.sh).
# shellcheck source=scripts/openblas_coretype.sh
source "$here/scripts/openblas_coretype.sh"
leap_export_openblas_coretype "$here/build/src/apps/leap"
# shellcheck disable=SC2046  # the placement options are separate words
exec mpirun -np "$np" $(leap_mpirun_placement "$np") "$here/build/src/apps/leap" train --config "$config" --mpi.sandbox_ranks="$sandbox" "$@"
