#!/usr/bin/env bash
# The CPU jobscript under a real Slurm: brings up a private one-node cluster on this machine
# (munged, slurmctld, slurmd -N localhost, as root, everything in a temporary folder on ports of
# its own), then
#  1. submits jobscripts/slurm_cpu.sbatch with sbatch and checks the job's HDF5 file and
#     checkpoints with h5py (check_run.py);
#  2. submits the same run again, and once its first checkpoint exists sends the early-stop
#     signal the way Slurm does before a job's end (scancel --signal=USR1 --batch): the job must
#     checkpoint, stop cleanly, requeue itself, and the requeued job must resume and finish with
#     every step exactly once, equal to the uninterrupted run (compare_runs.py);
#  3. does 2 again with the documented alternative launcher, srun --mpi=pmix;
#  4. submits with a config that does not exist: the job fails with exit code 2.
# Every daemon it started is stopped on exit, also on failure. Without root or without the
# slurm-wlm and munge packages it prints SKIP and exits 77 (ctest's SKIP_RETURN_CODE).
# Environment: LEAP (the leap binary). LEAP_SLURM_KEEP=1 keeps the temporary folder.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
: "${LEAP:?set LEAP to the leap binary}"
LEAP="$(realpath "$LEAP")"  # the jobs run in a folder of their own

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "bringing up slurmd and slurmctld needs root (CI runs as root)"
for c in munged mungekey slurmctld slurmd sbatch scontrol scancel squeue mpirun; do
  command -v "$c" >/dev/null || skip "$c not found: install slurm-wlm and munge (scripts/setup_deps.sh)"
done

tmp=$(mktemp -d /tmp/leap-slurm.XXXXXX)
chmod 755 "$tmp"  # munged wants its socket's folder reachable by everyone
daemons=()        # pids of the daemons this test started, stopped in reverse order
# Only this test's cluster: no setting of an enclosing Slurm job (CI may run inside one) leaks in.
for v in $(compgen -e | grep -E '^(SLURM_|SBATCH_|SALLOC_|SRUN_)'); do unset "$v"; done
export SLURM_CONF="$tmp/slurm.conf"

# shellcheck disable=SC2317  # called by the EXIT trap
stop_all() {
  # Jobs first, so that no rank outlives the daemons that track it.
  local jobs=()
  if [ ${#daemons[@]} -ge 2 ] && mapfile -t jobs < <(squeue -h -o %i 2>/dev/null) && [ ${#jobs[@]} -gt 0 ]; then
    scancel "${jobs[@]}" 2>/dev/null
    for _ in $(seq 60); do [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  local i
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do kill "${daemons[i]}" 2>/dev/null; done
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 50); do kill -0 "${daemons[i]}" 2>/dev/null || break; sleep 0.2; done
    kill -9 "${daemons[i]}" 2>/dev/null
  done
  if [ "${LEAP_SLURM_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap stop_all EXIT
trap "exit 1" INT TERM  # ctest ends a test that runs too long with a signal: clean up then too

fail=0
die() { echo "FAIL $*"; for f in "$tmp"/log/*.log; do echo "== $f"; tail -n 15 "$f"; done; exit 1; }

# Two free TCP ports next to each other, away from Slurm's defaults (6817/6818).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=""
for _ in $(seq 100); do
  p=$((20000 + RANDOM % 20000))
  if port_free "$p" && port_free $((p + 1)); then port=$p; break; fi
done
[ -n "$port" ] || die "no free port pair found"

# --- munge: a key of our own and a socket in the temporary folder -------------------------------
mkdir -p "$tmp"/{munge,log,state,spool,tmpfs,jobs}
mungekey -c -k "$tmp/munge/munge.key" || die "mungekey"
munged -F -f --socket="$tmp/munge/socket" --key-file="$tmp/munge/munge.key" --log-file="$tmp/log/munged.log" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/seed" >/dev/null 2>&1 &
daemons+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/socket" ] && break; sleep 0.1; done
[ -S "$tmp/munge/socket" ] || die "munged did not start"

# --- Slurm: one node named localhost with more CPUs declared than the machine has (the test's two
# jobs run side by side); proctrack/linuxproc and task/none need no cgroups. -----------------------
cat >"$SLURM_CONF" <<EOF
ClusterName=leaptest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
TmpFS=$tmp/tmpfs
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
KillWait=10
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
: >"$tmp/plugstack.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 &
daemons+=($!)
for _ in $(seq 100); do
  [ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ] && break
  sleep 0.3
done
[ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ] || die "the node did not come up idle: $(sinfo 2>&1)"
echo "ok   one-node Slurm up (ports $port, $((port + 1)))"

# --- helpers ---------------------------------------------------------------------------------
job_field() { scontrol show job "$1" 2>/dev/null | grep -o "\b$2=[^ ]*" | head -1 | cut -d= -f2; }
final_states=(COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY BOOT_FAIL DEADLINE)
# wait_state JOB SECONDS STATE...: waits until the job is in one of the states; fails at once when
# the job has ended in another.
wait_state() {
  local job="$1" secs="$2" s want; shift 2
  for _ in $(seq $((secs * 2))); do
    s=$(job_field "$job" JobState)
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    for want in "${final_states[@]}"; do [ "$s" = "$want" ] && break 2; done
    sleep 0.5
  done
  echo "job $job is $s, wanted $* (waited up to ${secs}s)"; return 1
}

# The run as a user would submit it, made tiny through the jobscript's documented variables.
mkdir -p "$tmp/model" && cp "$src/tests/train/tiny_config.json" "$tmp/model/config.json"
steps=6
export LEAP_HOME="$src" LEAP_BIN="$LEAP"
export LEAP_ARGS="--suite $src/tasks/level1.jsonl --model $tmp/model --train.random_init --train.batch_tasks 2
  --rl.group_size 4 --sampler.max_new_tokens 48 --mpi.sandbox_ranks 1 --sandbox.workers 1 --train.checkpoint_every 1
  --rl.pipeline sync"
# What mpirun needs on this machine, as for scripts/mpirun_local.sh: root, and loopback TCP.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo
submit() {  # submit NAME [ARGS...]: the CPU jobscript on 2 tasks (1 policy, 1 sandbox rank)
  local name="$1"; shift
  sbatch --parsable -J "$name" -D "$tmp/jobs" --ntasks-per-node=2 --cpus-per-task=1 --output="$tmp/jobs/$name.out" \
    "$src/jobscripts/slurm_cpu.sbatch" "$@"
}

# signal_after_checkpoint NAME JOB: once the job's first checkpoint exists, sends the early-stop
# signal as Slurm does before a job's end, to the batch shell.
signal_after_checkpoint() {
  local name="$1" job="$2"
  for _ in $(seq 600); do
    [ -e "$tmp/$name/checkpoints/step_000000/state.json" ] && break
    case "$(job_field "$job" JobState)" in PENDING|RUNNING|CONFIGURING) sleep 0.2 ;; *) break ;; esac
  done
  [ -e "$tmp/$name/checkpoints/step_000000/state.json" ] || die "no first checkpoint from job $job: $(tail -5 "$tmp/jobs/$name.out")"
  scancel --signal=USR1 --batch "$job" || die "scancel --signal=USR1"
}
# job_logs JOB: what slurmctld and slurmd said about the job, for a failure's report.
job_logs() {
  echo "== slurmctld and slurmd on job $1:"
  grep -h -E "JobId=$1\b|job $1\b|\[$1\.|job_id[= ]$1\b|Job $1\b" "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log" | tail -40
}
# check_requeued NAME JOB: the job stopped at a step boundary with that step's checkpoint and a
# flushed file, and requeued itself. Slurm holds a requeued job for a while before it may start
# again, which gives a look at the folder; then it is let go early, but not at once: slurmd
# refuses a launch whose credential is from the second in which the requeue revoked the job's
# last one ("already killed, do not launch batch job"; the job then fails) and a launch while
# the first batch step is still ending ("already running"). Slurm's own hold avoids both.
check_requeued() {
  local name="$1" job="$2" last requeued
  if ! wait_state "$job" 120 PENDING || [ "$(job_field "$job" Restarts)" != 1 ]; then
    echo "FAIL job $job ($name) was not requeued after USR1"; tail -20 "$tmp/jobs/$name.out"; job_logs "$job"
    fail=1; return
  fi
  requeued=$(date +%s)
  last=$(grep -o "stopped by SIG[A-Z0-9]* after step [0-9]*" "$tmp/jobs/$name.out" | grep -o "[0-9]*$" | tail -1)
  if [ -n "$last" ] && [ "$last" -lt $((steps - 1)) ] &&
     /usr/bin/python3 "$src/tests/train/check_run.py" "$tmp/$name" $((last + 1)) 2 4 1 >"$tmp/partial.txt"; then
    echo "ok   job $job ($name): USR1 stopped it after step $last with its checkpoint and $((last + 1)) steps in the HDF5 file; requeued"
  else
    echo "FAIL job $job ($name): the stopped job's folder (stopped after step '${last}')"; cat "$tmp/partial.txt"
    tail -20 "$tmp/jobs/$name.out"; fail=1
  fi
  for _ in $(seq 300); do
    grep -q "\[$job\.batch\] done with job" "$tmp/log/slurmd.log" && [ "$(date +%s)" -ge $((requeued + 2)) ] && break
    sleep 0.2
  done
  scontrol update JobId="$job" StartTime=now || die "scontrol update StartTime"
}

# Side by side: one uninterrupted run, and the same run twice more, stopped by USR1 and
# requeued: once launched by mpirun, once by the documented alternative, srun --mpi=pmix.
declare -A job_of
for name in straight stopped srun_stopped; do
  launcher=$([ $name = srun_stopped ] && echo srun || echo mpirun)
  job_of[$name]=$(LEAP_LAUNCHER=$launcher submit $name "$src/configs/demo_v1.ini" "$tmp/$name" --train.steps $steps) ||
    die "sbatch"
done
signal_after_checkpoint stopped "${job_of[stopped]}"
signal_after_checkpoint srun_stopped "${job_of[srun_stopped]}"
check_requeued stopped "${job_of[stopped]}"
check_requeued srun_stopped "${job_of[srun_stopped]}"

for name in straight stopped srun_stopped; do
  job=${job_of[$name]}
  wait_state "$job" 180 "${final_states[@]}" >/dev/null
  state="$(job_field "$job" JobState) $(job_field "$job" ExitCode)"
  if [ "$state" = "COMPLETED 0:0" ] && /usr/bin/python3 "$src/tests/train/check_run.py" "$tmp/$name" $steps 2 4 1; then
    echo "ok   job $job ($name): $state"
  else
    echo "FAIL job $job ($name): $state"; tail -30 "$tmp/jobs/$name.out"; job_logs "$job"; fail=1
    continue  # nothing finished to compare
  fi
  if [ $name = straight ]; then
    # The jobscript gives the ranks OpenBLAS's vector kernels where its own choice predates AVX2.
    fix=$("$LEAP" env --openblas-coretype)
    if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
      echo "skip job $job ($name): OPENBLAS_CORETYPE is set by the caller, the jobscript keeps it"
    elif [ -n "$fix" ] && ! grep -q "exported OPENBLAS_CORETYPE=$fix" "$tmp/jobs/$name.out"; then
      echo "FAIL job $job ($name): no OPENBLAS_CORETYPE=$fix for this CPU in the job's output"; fail=1
    elif [ -n "$fix" ] && grep -q "OpenBLAS uses its" "$tmp/jobs/$name.out"; then
      echo "FAIL job $job ($name): the ranks did not get OPENBLAS_CORETYPE (leap warned)"; fail=1
    elif [ -z "$fix" ] && grep -q "exported OPENBLAS_CORETYPE" "$tmp/jobs/$name.out"; then
      echo "FAIL job $job ($name): OPENBLAS_CORETYPE exported where OpenBLAS's choice is fine"; fail=1
    else
      echo "ok   job $job ($name): OpenBLAS kernels: ${fix:-its own choice}"
    fi
    continue
  fi
  # The requeued job appended to the same output: two starts, one resume, and the result equals
  # the uninterrupted run (every step exactly once).
  if [ "$(grep -c "^leap job $job (restart [01])" "$tmp/jobs/$name.out")" = 2 ] &&
     [ "$(grep -c "resuming from" "$tmp/jobs/$name.out")" = 1 ] && [ "$(job_field "$job" Restarts)" = 1 ]; then
    echo "ok   job $job ($name): the requeued job resumed once from its checkpoint"
  else
    echo "FAIL job $job ($name): requeued job's log"; cat "$tmp/jobs/$name.out"; fail=1
  fi
  /usr/bin/python3 "$src/tests/train/compare_runs.py" "$tmp/straight" "$tmp/$name" || fail=1
done

# 4. A config that does not exist: the job fails at once with exit code 2 and says why.
bad=$(submit bad "$tmp/missing.ini" "$tmp/bad") || die "sbatch"
wait_state "$bad" 60 "${final_states[@]}" >/dev/null
if [ "$(job_field "$bad" ExitCode)" = 2:0 ] && grep -q "missing.ini not found" "$tmp/jobs/bad.out"; then
  echo "ok   missing config: job failed with exit code 2"
else
  echo "FAIL missing config: $(job_field "$bad" JobState) $(job_field "$bad" ExitCode)"; cat "$tmp/jobs/bad.out"; fail=1
fi

[ "$fail" = 0 ] && echo "all Slurm checks passed"
exit $fail
