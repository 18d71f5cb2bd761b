# shellcheck shell=bash
# Sourced by scripts/mpirun_local.sh and jobscripts/mpirun_cpu.sh: how many
# physical cores this process may run on, the way Open MPI counts a machine's slots. nproc counts
# hardware threads, and lscpu lists the whole host's cores, more than a container or a Slurm job
# limited to some CPUs may use: this counts the distinct (core, socket) pairs of the CPUs in the
# process's affinity (/proc/self/status Cpus_allowed_list). Prints 0 when lscpu cannot tell.
leap_physical_cores() {
  local allowed
  allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status 2>/dev/null)
  lscpu -p=CPU,CORE,SOCKET 2>/dev/null | grep -v '^#' | awk -F, -v list="$allowed" '
    BEGIN {
      n = split(list, parts, ",")
      for (i = 1; i <= n; i++) {
        if (split(parts[i], ab, "-") == 2) { for (c = ab[1]; c <= ab[2]; c++) ok[c] = 1 }
        else if (parts[i] != "") ok[parts[i]] = 1
      }
    }
    list == "" || ($1 in ok) { print $2 "," $3 }' | sort -u | wc -l
}

# leap_mpirun_placement NP: mpirun options that give each of NP ranks its own share of this
# machine's cores (PE = cores / NP, bound to cores, ranks in slot order). Without them Open MPI
# binds each rank to a socket when NP > 2, and every rank on a socket then takes all of its cores
# for its threads (the backend sizes its pool from the affinity). More ranks than cores: no
# binding, the operating system shares the cores.
leap_mpirun_placement() {
  local np="$1" cores
  cores=$(leap_physical_cores)
  # lscpu could not tell (nproc would count hardware threads, more than Open MPI's cores).
  if [ "${cores:-0}" -le 0 ]; then echo "--bind-to none"; return; fi
  if [ "$np" -le "$cores" ]; then echo "--map-by slot:PE=$((cores / np)) --bind-to core"; else echo "--bind-to none"; fi
}
