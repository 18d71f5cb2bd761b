# shellcheck shell=bash
# Sourced by the launch scripts (scripts/mpirun_local.sh, jobscripts/mpirun_cpu.sh,
# jobscripts/slurm_cpu.sbatch). OpenBLAS chooses its kernels when it loads, from the CPU models
# it knows; on a CPU newer than the library it falls back to its SSE3 kernels and the CPU
# backend's GEMMs run several times slower (src/backend/blas_kernels.h). OPENBLAS_CORETYPE
# overrides that choice, but only from the environment a process starts with, so the launcher
# sets it for the ranks.

# leap_export_openblas_coretype LEAP_BINARY: unless OPENBLAS_CORETYPE is set already (the
# caller's choice wins), asks the binary which kernels this CPU needs (`leap env
# --openblas-coretype`, answered by the same OpenBLAS the ranks load) and exports the answer.
# Says so on stderr when it sets anything; a binary that cannot answer changes nothing.
leap_export_openblas_coretype() {
  [ -n "${OPENBLAS_CORETYPE:-}" ] && return 0
  local fix
  fix=$("$1" env --openblas-coretype 2>/dev/null) || return 0
  [ -n "$fix" ] || return 0
  export OPENBLAS_CORETYPE="$fix"
  echo "$(basename -- "$0"): exported OPENBLAS_CORETYPE=$fix: OpenBLAS's own kernel choice for this CPU predates AVX2 (leap env)" >&2
}
