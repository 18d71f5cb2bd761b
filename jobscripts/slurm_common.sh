# shellcheck shell=bash
# Sourced by the slurm_*.sbatch jobscripts: what every LEAP Slurm job does the same way.
#  - resolves the config, the run folder and the leap binary from arguments and variables;
#  - runs the launcher (mpirun, or srun --mpi=pmix) in the background and waits for it, because
#    bash runs a trap only once a foreground child has exited: with mpirun in the foreground the
#    early USR1 from Slurm (#SBATCH --signal=B:USR1@300) would wait for the whole run;
#  - forwards that USR1 to the launcher, which passes it to every rank; the ranks checkpoint at
#    the next step boundary, flush the HDF5 file and exit 0;
#  - then requeues the job, which starts again with --resume auto and continues from that
#    checkpoint (a requeued job keeps its job id, so the default run folder is the same).
# The jobscript sets LEAP_HOME (the repository) before sourcing this file.
# Variables (all optional; jobscripts/README.md has the table): LEAP_BIN, LEAP_CONFIG, LEAP_RUN_DIR,
#   LEAP_ARGS (extra leap options), LEAP_MPIRUN_ARGS (extra launcher options),
#   LEAP_LAUNCHER (mpirun | srun), LEAP_BIND (core | none), LEAP_REQUEUE (1 | 0).
# Arguments of the jobscript: [CONFIG.ini [RUN_DIR]] [--section.key=value ...]

# leap_job_init DEFAULT_CONFIG ARGS...: sets LEAP_BIN, LEAP_CONFIG, LEAP_RUN_DIR and
# leap_extra=(options); DEFAULT_CONFIG may be "" when a job has no sensible default.
leap_job_init() {
  local default_config="$1"; shift
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
  leap_extra=("${args[@]}" "$@")
  if [ ! -x "$LEAP_BIN" ]; then
    echo "leap job: $LEAP_BIN is not an executable; build it (scripts/build.sh) or set LEAP_BIN" >&2
    exit 2
  fi
  if [ ! -f "$LEAP_CONFIG" ]; then
    echo "leap job: config $LEAP_CONFIG not found; pass CONFIG.ini as the first argument or set LEAP_CONFIG" >&2
    exit 2
  fi
}

# leap_job_launch LAUNCHER_OPTIONS...: runs `leap train` on every task of the allocation and
# returns its exit status; requeues the job after a stop asked for by USR1.
leap_job_launch() {
  local extra=() cmd=()
  read -r -d '' -a extra <<<"${LEAP_MPIRUN_ARGS:-}" || true
  local train=("$LEAP_BIN" train --config "$LEAP_CONFIG" --run.out_dir "$LEAP_RUN_DIR" --resume auto
               "${leap_extra[@]}")
  if [ "${LEAP_LAUNCHER:-mpirun}" = srun ]; then
    # srun starts the ranks itself (PMIx) and forwards USR1 to them like mpirun does.
    cmd=(srun --mpi=pmix --kill-on-bad-exit=1 "${extra[@]}" "${train[@]}")
  else
    # Variables the ranks need on every node: Open MPI does not pass the environment to other
    # nodes by itself.
    local v
    for v in $(compgen -e | grep -E '^(NCCL_|HDF5_USE_FILE_LOCKING$|OPENBLAS_NUM_THREADS$|OMP_)'); do
      extra+=(-x "$v")
    done
    cmd=(mpirun -np "${SLURM_NTASKS:-1}" "$@" "${extra[@]}" "${train[@]}")
  fi
  echo "leap job ${SLURM_JOB_ID:-} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST:-$(hostname)}: ${cmd[*]}"
  local stop="" pid="" rc
  # Trapped before the launch, so that an early USR1 cannot end this shell; the launcher starts
  # with USR1 at its default (bash resets trapped signals in background children).
  trap 'stop=USR1; echo "leap job: USR1, asking the ranks to checkpoint and stop"; [ -n "$pid" ] && kill -USR1 "$pid" 2>/dev/null' USR1
  "${cmd[@]}" &
  pid=$!
  # wait returns early (status > 128) whenever a trapped signal arrives: wait again until the
  # launcher is gone, then once more for its own exit status.
  while :; do
    wait "$pid"
    kill -0 "$pid" 2>/dev/null || break
  done
  wait "$pid"
  rc=$?
  trap - USR1
  if [ -n "$stop" ] && [ "$rc" = 0 ] && [ "${LEAP_REQUEUE:-1}" = 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
    echo "leap job: stopped cleanly after USR1; requeueing job $SLURM_JOB_ID to resume from its checkpoint"
    scontrol requeue "$SLURM_JOB_ID"
    # Slurm ends this script as part of the requeue; leave before it does.
    exit 0
  fi
  if [ -n "$stop" ] && [ "$rc" != 0 ]; then
    echo "leap job: the ranks exited with status $rc after USR1; not requeueing (resume by hand with --resume auto)" >&2
  fi
  return "$rc"
}

# leap_bind_options: mpirun mapping for one rank per task, each on SLURM_CPUS_PER_TASK cores
# (LEAP_BIND=none leaves placement to the operating system, e.g. when tasks outnumber cores).
leap_bind_options() {
  local per_node="${SLURM_NTASKS_PER_NODE:-}"
  per_node="${per_node%%(*}"  # Slurm may write "4(x2)"
  if [ "${LEAP_BIND:-core}" = none ]; then
    echo "--bind-to none"
  elif [ -n "$per_node" ]; then
    echo "--map-by ppr:${per_node}:node:PE=${SLURM_CPUS_PER_TASK:-1} --bind-to core"
  else
    echo "--map-by slot:PE=${SLURM_CPUS_PER_TASK:-1} --bind-to core"
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
