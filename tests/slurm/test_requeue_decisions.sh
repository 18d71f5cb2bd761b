#!/usr/bin/env bash
# The jobscripts' requeue decisions (jobscripts/slurm_common.sh, leap_job_launch), case by case.
# The real one-node Slurm test (test_slurm.sh) shows a USR1-stopped job requeueing and resuming
# for real; this one covers the cases that cannot be timed there, with stand-ins for the
# launcher (which exits with the status under test) and for scontrol (which records the
# requeue and answers as told):
#   exit 0 after a USR1 (it came during the last step)   -> no requeue, status 0
#   exit 75 (stopped early with a newer checkpoint)       -> requeue, however often
#   exit 75 without a newer checkpoint                    -> requeue, at most LEAP_CRASH_REQUEUES times
#   exit 75 and scontrol refuses                          -> the job fails (75), not COMPLETED
#   a crash after writing a newer checkpoint              -> requeue, at most LEAP_CRASH_REQUEUES
#   a crash with no newer checkpoint                      -> no requeue, the crash's status
#   srun reports a signal (128 + n) after a USR1 and a   -> requeue as a stop, past the crash limit
#   newer checkpoint (kill-on-bad-exit after the first 75)
#   the same without a newer checkpoint                  -> a crash: no requeue past the limit
#   a USR1 before the launch (during the job's set-up)    -> requeue, the ranks never started,
#                                                            at most LEAP_CRASH_REQUEUES times
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$tmp/bin"
# The launcher: srun (LEAP_LAUNCHER=srun) runs the "leap" given as LEAP_BIN, which writes a
# checkpoint when asked and exits with FAKE_RC.
cat > "$tmp/bin/srun" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [ "$1" != "$LEAP_BIN" ]; do shift; done
exec "$@"
SH
cat > "$tmp/leap" <<'SH'
#!/usr/bin/env bash
# As Slurm's early signal reaching the jobscript while the ranks run.
trap "" USR1  # like leap, which stops at a step boundary instead of dying
touch "$LEAP_RUN_DIR/launched"
if [ -n "${FAKE_USR1:-}" ]; then kill -USR1 "$PPID"; sleep 0.2; fi
if [ -n "${FAKE_CHECKPOINT:-}" ]; then mkdir -p "$LEAP_RUN_DIR/checkpoints/$FAKE_CHECKPOINT"; echo '{}' > "$LEAP_RUN_DIR/checkpoints/$FAKE_CHECKPOINT/state.json"; fi
exit "${FAKE_RC:-0}"
SH
cat > "$tmp/bin/scontrol" <<'SH'
#!/usr/bin/env bash
echo "$*" >> "$SCONTROL_LOG"
exit "${SCONTROL_RC:-0}"
SH
chmod +x "$tmp/bin/srun" "$tmp/leap" "$tmp/bin/scontrol"
echo "[run]" > "$tmp/config.ini"

fail=0
# case NAME WANT_STATUS WANT_REQUEUES ENV...: runs leap_job_launch in a fresh bash with ENV.
case_() {
  local name=$1 want_rc=$2 want_requeues=$3; shift 3
  rm -rf "$tmp/run"; mkdir -p "$tmp/run/checkpoints/step_000001"; echo '{}' > "$tmp/run/checkpoints/step_000001/state.json"
  : > "$tmp/scontrol.log"
  env PATH="$tmp/bin:$PATH" LEAP_HOME="$here/../.." LEAP_BIN="$tmp/leap" LEAP_RUN_DIR="$tmp/run" \
      LEAP_LAUNCHER=srun SLURM_JOB_ID=42 SCONTROL_LOG="$tmp/scontrol.log" "$@" \
      bash -c 'set -u; source "$LEAP_HOME/jobscripts/slurm_common.sh"; leap_job_init "" "'"$tmp"'/config.ini"
               if [ -n "${EARLY_USR1:-}" ]; then kill -USR1 $$; fi; leap_job_launch' \
      > "$tmp/$name.out" 2>&1
  local rc=$? requeues
  requeues=$(grep -c '^requeue 42$' "$tmp/scontrol.log")
  if [ "$rc" = "$want_rc" ] && [ "$requeues" = "$want_requeues" ]; then
    echo "ok   $name (status $rc, $requeues requeue)"
    if [ "$name" = finished ] && ! grep -q "USR1 came during the last step" "$tmp/$name.out"; then
      echo "FAIL finished: the USR1 did not reach the jobscript"; cat "$tmp/$name.out"; fail=1
    fi
    if [[ "$name" == usr1-before-launch* ]] && [ -e "$tmp/run/launched" ]; then
      echo "FAIL $name: the ranks were started after the stop"; fail=1
    fi
  else
    echo "FAIL $name: status $rc (want $want_rc), $requeues requeues (want $want_requeues)"; cat "$tmp/$name.out"; fail=1
  fi
}
case_ finished 0 0 FAKE_RC=0 FAKE_USR1=1
case_ stopped-early 0 1 FAKE_RC=75
case_ stopped-early-progress-past-limit 0 1 FAKE_RC=75 FAKE_CHECKPOINT=step_000002 SLURM_RESTART_COUNT=5
case_ stopped-early-no-progress-limit 75 0 FAKE_RC=75 SLURM_RESTART_COUNT=2
case_ requeue-refused 75 1 FAKE_RC=75 SCONTROL_RC=1
case_ no-slurm-job 75 0 FAKE_RC=75 SLURM_JOB_ID=
case_ crash-after-checkpoint 0 1 FAKE_RC=1 FAKE_CHECKPOINT=step_000002
case_ crash-limit-reached 1 0 FAKE_RC=1 FAKE_CHECKPOINT=step_000002 SLURM_RESTART_COUNT=2
case_ crash-no-new-checkpoint 1 0 FAKE_RC=1
case_ srun-killed-after-stop 0 1 FAKE_USR1=1 FAKE_RC=137 FAKE_CHECKPOINT=step_000002 SLURM_RESTART_COUNT=2
case_ srun-killed-no-checkpoint 137 0 FAKE_USR1=1 FAKE_RC=137 SLURM_RESTART_COUNT=2
case_ usr1-before-launch 0 1 EARLY_USR1=1 FAKE_RC=0
case_ usr1-before-launch-limit 75 0 EARLY_USR1=1 FAKE_RC=0 SLURM_RESTART_COUNT=2
[ "$fail" = 0 ] && echo "all requeue decisions as documented"
exit $fail
