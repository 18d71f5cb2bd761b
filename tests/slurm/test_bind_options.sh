#!/usr/bin/env bash
# The jobscripts' mpirun placement (jobscripts/slurm_common.sh, leap_bind_options) is accepted by
# this machine's Open MPI, with lscpu standing in for a node with and without hyperthreads: on a
# hyperthreaded node the options count hardware threads, and Open MPI 4.1 refuses PE with
# hardware threads bound by core, so every GPU jobscript failed to start there. Each case runs
# `mpirun -np 2 <options> true` (two ranks of one CPU on one socket, as this machine can host).
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$tmp/bin"
cat > "$tmp/bin/lscpu" <<'SH'
#!/usr/bin/env bash
if [ "${1:-}" = "-p=SOCKET" ]; then printf '# socket\n0\n0\n'; exit 0; fi
if [ "${1:-}" = "-p=CORE,SOCKET" ]; then printf '# core,socket\n0,0\n1,0\n'; exit 0; fi
echo "Thread(s) per core:  $FAKE_THREADS"
SH
chmod +x "$tmp/bin/lscpu"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
fail=0
for threads in 1 2; do
  for per_node in 2 ""; do
    opts=$(PATH="$tmp/bin:$PATH" FAKE_THREADS=$threads SLURM_NTASKS_PER_NODE=$per_node SLURM_CPUS_PER_TASK=1 \
      bash -c "source '$here/../../jobscripts/slurm_common.sh'; leap_bind_options")
    # shellcheck disable=SC2086
    if out=$(mpirun -np 2 --mca btl self,vader $opts true 2>&1); then
      echo "ok: $threads thread(s) a core, tasks per node '${per_node}': $opts"
    else
      echo "FAIL: $threads thread(s) a core, tasks per node '${per_node}': mpirun $opts: $(echo "$out" | head -n 5)"
      fail=1
    fi
  done
done
case "$(PATH="$tmp/bin:$PATH" FAKE_THREADS=2 SLURM_NTASKS_PER_NODE=2 bash -c "source '$here/../../jobscripts/slurm_common.sh'; leap_bind_options")" in
  *"--bind-to hwthread"*) ;;
  *) echo "FAIL: a hyperthreaded node's options do not bind to hardware threads"; fail=1 ;;
esac
# A job that does not own the whole node (Slurm gave it 1 of the node's 2 CPUs): its CPUs need
# not split evenly over the sockets, so the ranks are mapped per node, not per socket.
case "$(PATH="$tmp/bin:$PATH" FAKE_THREADS=1 SLURM_NTASKS_PER_NODE=2 SLURM_CPUS_ON_NODE=1 bash -c "source '$here/../../jobscripts/slurm_common.sh'; leap_bind_options")" in
  *"ppr:2:node"*) echo "ok: a job on part of a node maps its ranks per node" ;;
  *) echo "FAIL: a job on part of a node still maps its ranks per socket"; fail=1 ;;
esac
# jobscripts/mpirun_cpu.sh's placement (scripts/cpu_count.sh, leap_mpirun_placement) on this
# machine, with its real lscpu: each of NP ranks gets cores / NP cores of its own.
# shellcheck source=scripts/cpu_count.sh
source "$here/../../scripts/cpu_count.sh"
cores=$(leap_physical_cores)
for np in 1 2; do
  [ "$cores" -ge "$np" ] || continue
  opts=$(leap_mpirun_placement "$np")
  # shellcheck disable=SC2086
  got=$(mpirun -np "$np" --mca btl self,vader $opts bash -c "source '$here/../../scripts/cpu_count.sh'; leap_physical_cores" 2>&1 | sort -u | tr '\n' ' ')
  if [ "$got" = "$((cores / np)) " ]; then
    echo "ok: mpirun_cpu.sh's placement gives each of $np rank(s) $((cores / np)) of $cores cores: $opts"
  else
    echo "FAIL: mpirun_cpu.sh's placement for $np rank(s) ($opts): cores seen by the ranks: $got (want $((cores / np)))"; fail=1
  fi
done
exit "$fail"
