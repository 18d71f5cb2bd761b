# shellcheck shell=bash
# Sourced by the slurm_*.sbatch jobscripts: what every LEAP Slurm job does the same way.
#  - resolves the config, the run folder and the leap binary from arguments and variables;
#  - runs the launcher (mpirun, or srun --mpi=pmix) in the background and waits for it, because
#    bash runs a trap only once a foreground child has exited: with mpirun in the foreground the
#    early USR1 from Slurm (#SBATCH --signal=B:USR1@300) would wait for the whole run;
#  - forwards that USR1 to the launcher, which passes it to every rank; the ranks checkpoint at
#    the next step boundary, flush the HDF5 file and exit 75 (EX_TEMPFAIL: stopped early, with a
#    resumable checkpoint); a run that finished anyway (the USR1 came during its last step) exits
#    0 and is not requeued;
#  - requeues the job on exit 75 only, and checks that the requeue itself worked (a failed
#    `scontrol requeue` fails the job instead of leaving it COMPLETED with the run unfinished);
#    the requeued job starts again with --resume auto (it keeps its job id, so the default run
#    folder is the same);
#  - after a crash (any other status) that still left a newer checkpoint than the job started
#    from, requeues at most LEAP_CRASH_REQUEUES times (default 2), counted by
#    SLURM_RESTART_COUNT.
# The jobscript sets LEAP_HOME (the repository) before sourcing this file.
# Variables (all optional; jobscripts/README.md has the table): LEAP_BIN, LEAP_CONFIG, LEAP_RUN_DIR,
#   LEAP_ARGS (extra leap options), LEAP_MPIRUN_ARGS (extra launcher options),
#   LEAP_LAUNCHER (mpirun | srun), LEAP_BIND (core | none), LEAP_REQUEUE (1 | 0),
#   LEAP_CRASH_REQUEUES (default 2), LEAP_PREEMPT_MARGIN_S (seconds between Slurm's USR1 and the
#   kill; the jobscripts set it to match their --signal=B:USR1@300).
# Written for bash 4.2 and later, also in POSIX mode: no empty "${array[@]}" under set -u, and
# the launcher's status is taken inside its wait loop.
# Arguments of the jobscript: [CONFIG.ini [RUN_DIR]] [--section.key=value ...]

# leap_job_init DEFAULT_CONFIG ARGS...: sets LEAP_BIN, LEAP_CONFIG, LEAP_RUN_DIR and
# leap_extra=(options); DEFAULT_CONFIG may be "" when a job has no sensible default.
leap_job_init() {
  local default_config="$1"; shift
  # An early USR1 (a short time limit, or scancel --signal=USR1 --batch right after the start)
  # must not end this shell before the launch: it is remembered, and leap_job_launch requeues
  # without starting the ranks.
  leap_stop=""
  trap 'leap_stop=USR1' USR1
  LEAP_BIN="${LEAP_BIN:-$LEAP_HOME/build/src/apps/leap}"
  if [ $# -gt 0 ] && [[ "$1" != --* ]]; then LEAP_CONFIG="$1"; shift; fi
  if [ $# -gt 0 ] && [[ "$1" != --* ]]; then LEAP_RUN_DIR="$1"; shift; fi
  LEAP_CONFIG="${LEAP_CONFIG:-$default_config}"
  if [ -z "$LEAP_CONFIG" ]; then
    echo "leap job: no config; pass CONFIG.ini as the first argument of the jobscript or set LEAP_CONFIG" >&2
    exit 2
  fi
  # The job id survives a requeue, so the requeued job finds its own run folder again.
  LEAP_RUN_DIR="${LEAP_RUN_DIR:-runs/${SLURM_JOB_NAME:-leap}-${SLURM_JOB_ID:-local}}"
  local args=()
  # Split on any white space, newlines included (read -d '' reads to the end and returns 1).
  read -r -d '' -a args <<<"${LEAP_ARGS:-}" || true
  # ${a[@]+"${a[@]}"}: an empty array is no error under set -u on bash 4.2.
  leap_extra=(${args[@]+"${args[@]}"} "$@")
  if [ ! -x "$LEAP_BIN" ]; then
    echo "leap job: $LEAP_BIN is not an executable; build it for your GPUs (LEAP_CUDA_ARCHS=\"80;90\" scripts/build.sh) or set LEAP_BIN" >&2
    exit 2
  fi
  if [ ! -f "$LEAP_CONFIG" ]; then
    echo "leap job: config $LEAP_CONFIG not found; pass CONFIG.ini as the first argument or set LEAP_CONFIG" >&2
    exit 2
  fi
}

# The newest checkpoint folder of the run, or "" (names sort by step: step_NNNNNN).
leap_latest_checkpoint() {
  local d latest=""
  for d in "$LEAP_RUN_DIR"/checkpoints/step_*; do
    [ -f "$d/state.json" ] && latest="$d"
  done
  echo "$latest"
}

# leap_requeue WHY: requeues this job; fails the job when Slurm refuses.
leap_requeue() {
  echo "leap job: $1; requeueing job $SLURM_JOB_ID to resume from its checkpoint"
  if ! scontrol requeue "$SLURM_JOB_ID"; then
    echo "leap job: scontrol requeue $SLURM_JOB_ID failed: the run is unfinished; resume it by hand with --resume auto (the jobscript does this)" >&2
    exit 75
  fi
  # Slurm ends this script as part of the requeue; leave before it does.
  exit 0
}

# leap_job_launch LAUNCHER_OPTIONS...: runs `leap train` on every task of the allocation and
# returns its exit status; requeues the job when the run stopped early (exit 75), or crashed
# after writing a newer checkpoint.
leap_job_launch() {
  local extra=() cmd=()
  read -r -d '' -a extra <<<"${LEAP_MPIRUN_ARGS:-}" || true
  local train=("$LEAP_BIN" train --config "$LEAP_CONFIG" --run.out_dir "$LEAP_RUN_DIR" --resume auto
               ${leap_extra[@]+"${leap_extra[@]}"})
  if [ "${LEAP_LAUNCHER:-mpirun}" = srun ]; then
    # srun starts the ranks itself (PMIx) and forwards USR1 to them like mpirun does; block
    # distribution keeps consecutive ranks (and so a rank and its GPU) on one package.
    # Since Slurm 22.05 srun no longer inherits --cpus-per-task from the allocation: without it
    # every rank would be bound to one core (one backend thread, its sandbox workers beside it).
    cmd=(srun --mpi=pmix --kill-on-bad-exit=1 -m block:block --cpu-bind=cores
         --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}" ${extra[@]+"${extra[@]}"} "${train[@]}")
  else
    # Variables the ranks need on every node: Open MPI does not pass the environment to other
    # nodes by itself.
    local v
    for v in $(compgen -e | grep -E '^(NCCL_|HDF5_USE_FILE_LOCKING$|OPENBLAS_NUM_THREADS$|OPENBLAS_CORETYPE$|OMP_|LEAP_PREEMPT_MARGIN_S$|CUDA_DEVICE_ORDER$)'); do
      extra+=(-x "$v")
    done
    cmd=(mpirun -np "${SLURM_NTASKS:-1}" "$@" ${extra[@]+"${extra[@]}"} "${train[@]}")
  fi
  echo "leap job ${SLURM_JOB_ID:-} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST:-$(hostname)}: ${cmd[*]}"
  local stop="${leap_stop:-}" pid="" rc=0 before
  if [ -n "$stop" ]; then
    # Requeued as often as after a crash: a job whose time limit is within the USR1 margin
    # (--signal) gets its USR1 at once on every start and would requeue itself forever.
    local restarts="${SLURM_RESTART_COUNT:-0}" limit="${LEAP_CRASH_REQUEUES:-2}"
    echo "leap job: USR1 came before the launch; nothing was started"
    if [ "${LEAP_REQUEUE:-1}" = 1 ] && [ -n "${SLURM_JOB_ID:-}" ] && [ "$restarts" -lt "$limit" ]; then
      leap_requeue "stopped before the launch (requeue $((restarts + 1)) of at most $limit)"
    fi
    echo "leap job: not requeueing (restarted $restarts times); if every start gets USR1 at once, the job's --time is within its --signal margin: raise --time" >&2
    return 75
  fi
  before=$(leap_latest_checkpoint)
  # Trapped before the launch, so that an early USR1 cannot end this shell; the launcher starts
  # with USR1 at its default (bash resets trapped signals in background children).
  trap 'stop=USR1; echo "leap job: USR1, asking the ranks to checkpoint and stop"; [ -n "$pid" ] && kill -USR1 "$pid" 2>/dev/null' USR1
  # One that came since the check above was remembered by leap_job_init's trap.
  [ -n "${leap_stop:-}" ] && stop=USR1
  "${cmd[@]}" &
  pid=$!
  # A USR1 between the launch and the line above found no pid to forward to.
  [ -n "$stop" ] && kill -USR1 "$pid" 2>/dev/null
  # wait returns early (status > 128) whenever a trapped signal arrives: wait again until the
  # launcher is gone. The status is kept from inside the loop: the wait that reaps the
  # launcher is the one that knows it (a later `wait $pid` answers 127 in POSIX mode).
  while :; do
    wait "$pid"
    rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - USR1
  # With srun --kill-on-bad-exit, the first rank to exit 75 gets the others killed while they
  # finalize, and srun then reports the signal (128 + n) instead of 75. After a forwarded USR1
  # and a checkpoint newer than the launch's, that is the stop, not a crash: it must not count
  # against LEAP_CRASH_REQUEUES.
  if [ -n "$stop" ] && [ "${LEAP_LAUNCHER:-mpirun}" = srun ] && [ "$rc" -gt 128 ]; then
    local newest
    newest=$(leap_latest_checkpoint)
    if [ -n "$newest" ] && [ "$newest" != "$before" ]; then
      echo "leap job: srun reported status $rc after the USR1 stop wrote $newest (ranks killed while finalizing): taken as 75"
      rc=75
    fi
  fi
  local can_requeue=0
  [ "${LEAP_REQUEUE:-1}" = 1 ] && [ -n "${SLURM_JOB_ID:-}" ] && can_requeue=1
  case "$rc" in
    0) [ -n "$stop" ] && echo "leap job: USR1 came during the last step; the run is complete, not requeueing" ;;
    75)
      # A stop that wrote no newer checkpoint (the USR1 came during the set-up or the first step
      # of this start) is requeued as often as a crash: when every start is stopped before its
      # first step (a --time within the margin of a slow set-up), it would requeue forever.
      local newest75 restarts75="${SLURM_RESTART_COUNT:-0}" limit75="${LEAP_CRASH_REQUEUES:-2}"
      newest75=$(leap_latest_checkpoint)
      if [ "$can_requeue" = 1 ] && [ "$newest75" != "$before" ]; then
        leap_requeue "the run stopped early with a checkpoint (exit 75)"
      elif [ "$can_requeue" = 1 ] && [ "$restarts75" -lt "$limit75" ]; then
        leap_requeue "the run stopped early before writing a new checkpoint (requeue $((restarts75 + 1)) of at most $limit75 without progress)"
      elif [ "$can_requeue" = 1 ]; then
        echo "leap job: stopped again before any new checkpoint (restarted $restarts75 times): not requeueing; if every start is stopped during its set-up, raise --time or the --signal margin" >&2
      fi
      echo "leap job: the run stopped early; a new job continues it when given the run folder: sbatch <jobscript> $LEAP_CONFIG $LEAP_RUN_DIR (a new job id would otherwise start a new folder)" >&2 ;;
    *)
      local after restarts="${SLURM_RESTART_COUNT:-0}" limit="${LEAP_CRASH_REQUEUES:-2}"
      after=$(leap_latest_checkpoint)
      if [ "$can_requeue" = 1 ] && [ -n "$after" ] && [ "$after" != "$before" ] && [ "$restarts" -lt "$limit" ]; then
        leap_requeue "the ranks exited with status $rc after writing $after (requeue $((restarts + 1)) of at most $limit after a crash)"
      fi
      echo "leap job: the ranks exited with status $rc; not requeueing (newest checkpoint: ${after:-none}; resume by hand: sbatch <jobscript> $LEAP_CONFIG $LEAP_RUN_DIR)" >&2 ;;
  esac
  return "$rc"
}

# leap_bind_options: mpirun mapping for one rank per task, each on SLURM_CPUS_PER_TASK CPUs,
# ranks filled socket by socket (ppr:N:socket; Open MPI 4.1 knows no 'package' there) so that
# a rank shares the package of its GPU (LEAP gives a
# node's GPUs to its ranks in local order, and GPUs are numbered by package). Slurm counts
# hardware threads as CPUs on nodes with hyperthreading, so Open MPI is told to count them too,
# and then binds to hardware threads: Open MPI 4.1 refuses PE with --use-hwthread-cpus and
# --bind-to core ("a conflicting binding policy").
# Socket filling assumes the job owns every CPU of the node (the GPU jobscripts ask for
# --exclusive): where Slurm gave it fewer than the node's CPUs (SLURM_CPUS_ON_NODE against
# leap_slurm_node_cpus, both in Slurm's unit; a shared CPU node), its CPUs need not split evenly
# over the sockets, and the ranks are mapped per node.
# --report-bindings logs where every rank landed. LEAP_BIND=none leaves placement to the
# operating system, e.g. when tasks outnumber cores.
# The node's CPUs as Slurm counts them (hardware threads or cores, as slurm.conf says), to compare
# with SLURM_CPUS_ON_NODE in the same unit: Slurm's CPUEfctv (or CPUTot) of this node, or, where scontrol cannot
# tell, the node's physical cores (the unit when slurm.conf counts cores; where it counts
# threads, a job on part of a node may then pass for the whole node).
leap_slurm_node_cpus() {
  local tot="" info
  if [ -n "${SLURMD_NODENAME:-}" ] && info=$(scontrol show node "$SLURMD_NODENAME" 2>/dev/null); then
    # CPUEfctv (Slurm 22.05 on): CPUTot less the CPUs kept for the system (CoreSpecCount,
    # CPUSpecList), which no job gets: an exclusive job's SLURM_CPUS_ON_NODE equals it.
    tot=$(grep -o 'CPUEfctv=[0-9]*' <<<"$info" | head -1 | cut -d= -f2)
    [ -n "$tot" ] || tot=$(grep -o 'CPUTot=[0-9]*' <<<"$info" | head -1 | cut -d= -f2)
  fi
  if [ -n "$tot" ]; then echo "$tot"; else lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l; fi
}

leap_bind_options() {
  local per_node="${SLURM_NTASKS_PER_NODE:-}" pe="${SLURM_CPUS_PER_TASK:-1}" packages threads
  per_node="${per_node%%(*}"  # Slurm may write "4(x2)"
  packages=$(lscpu -p=SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
  threads=$(lscpu 2>/dev/null | awk -F: '/^Thread\(s\) per core/ {gsub(/ /, "", $2); print $2}')
  local bind="--bind-to core"
  [ "${threads:-1}" -gt 1 ] 2>/dev/null && bind="--use-hwthread-cpus --bind-to hwthread"
  local node_cpus whole=1
  node_cpus=$(leap_slurm_node_cpus)
  [ -n "${SLURM_CPUS_ON_NODE:-}" ] && [ "${node_cpus:-0}" -gt 0 ] && [ "$SLURM_CPUS_ON_NODE" -lt "$node_cpus" ] && whole=0
  if [ "${LEAP_BIND:-core}" = none ]; then
    echo "--bind-to none"
  elif [ "$whole" = 1 ] && [ -n "$per_node" ] && [ "${packages:-0}" -gt 0 ] && [ $((per_node % packages)) = 0 ]; then
    echo "--map-by ppr:$((per_node / packages)):socket:PE=$pe $bind --report-bindings"
  elif [ -n "$per_node" ]; then
    echo "--map-by ppr:${per_node}:node:PE=$pe $bind --report-bindings"
  else
    echo "--map-by slot:PE=$pe $bind --report-bindings"
  fi
}

# leap_print_gpus: the GPUs and driver this job sees, for the log (CUDA 13 needs driver >= 580;
# leap itself refuses an older one with an error).
leap_print_gpus() {
  echo "leap job: CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-<unset>}"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  else
    echo "leap job: nvidia-smi not found on $(hostname): is this a GPU node?" >&2
  fi
}
