# shellcheck shell=bash
# Sourced by scripts/mpirun_local.sh: how many
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
