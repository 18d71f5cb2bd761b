#!/usr/bin/env bash
# The streaming pipeline against the synchronous one (rl.pipeline = stream / sync) on a CPU demo
# (2 policy ranks, 2 sandbox ranks of 2 workers; configs/demo_v1.ini, the first demo, unless
# LEAP_BENCH_CONFIG names another, e.g. configs/demo.ini), in two settings:
#   plain      the demo as it is, where the interpreter's verification is ~1% of a step;
#   simulated  sandbox.simulated_exec_ms = MS: every candidate that ran holds its slot MS longer,
#              asleep, standing in for timed GPU trials (benchmarks only; labelled in the output).
# For each seed the four runs are interleaved (sync, stream, sync, stream), so a slow spell of
# this shared machine hits both arms. Same seed, same tasks: the ratio is taken per seed.
# Prints, per setting and pipeline, the mean step time per seed and over seeds (mean and
# spread), the stream/sync ratio, the share of the synchronous step spent verifying, the ideal
# (the turns as the longest of generation and verification plus training, against their sum),
# and the policy ranks' wait outside the end-of-step drain.
# Run from the repository root after scripts/build.sh:
#   benchmarks/pipeline_compare.sh [STEPS] [MS] [SEEDS...]     (defaults: 3 1500 1 2 3)
# LEAP_BENCH_SETTINGS="simulated" runs one setting only; LEAP_BENCH_OUT=DIR keeps the runs;
# LEAP_BENCH_CONFIG=FILE runs another config (default configs/demo_v1.ini);
# LEAP_BENCH_EXTRA="--train.batch_tasks 8" adds leap options to every run (printed first); LEAP=PATH
# runs another leap binary (a copy, so that a rebuild does not change it mid-run);
# LEAP_BENCH_NOSPEC=1 adds an arm after stream, nospec: stream with
# rl.speculative_turns = false, for what speculative turns change; LEAP_BENCH_AHEAD=1 adds one,
# ahead: stream with rl.rollout_ahead = true (the next step's turn 1 started during the step).
set -euo pipefail
steps="${1:-3}" ms="${2:-1500}"
shift $(( $# > 2 ? 2 : $# ))
seeds=("$@"); [ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
leap="${LEAP:-build/src/apps/leap}"
config="${LEAP_BENCH_CONFIG:-configs/demo_v1.ini}"
out="${LEAP_BENCH_OUT:-$(mktemp -d)}"
mkdir -p "$out"
read -r -a more <<<"${LEAP_BENCH_EXTRA:-}"
echo "runs of $config in $out${more[*]:+; every run with ${more[*]}}"
for seed in "${seeds[@]}"; do
  for setting in ${LEAP_BENCH_SETTINGS:-plain simulated}; do
    extra=(); [ "$setting" = simulated ] && extra=(--sandbox.simulated_exec_ms "$ms")
    arms=(sync stream); [ "${LEAP_BENCH_NOSPEC:-0}" = 1 ] && arms+=(nospec)
    [ "${LEAP_BENCH_AHEAD:-0}" = 1 ] && arms+=(ahead)
    for pipeline in "${arms[@]}"; do
      dir="$out/$setting-$pipeline-$seed"
      how=(--rl.pipeline "$pipeline")
      [ "$pipeline" = nospec ] && how=(--rl.pipeline stream --rl.speculative_turns false)
      [ "$pipeline" = ahead ] && how=(--rl.pipeline stream --rl.rollout_ahead true)
      scripts/mpirun_local.sh 4 "$leap" train --config "$config" --train.steps "$steps" --run.seed "$seed" \
        "${how[@]}" "${extra[@]}" "${more[@]}" --run.out_dir "$dir" >"$dir.log" 2>&1 || { echo "FAILED: $dir.log"; exit 1; }
      echo "done $setting $pipeline seed $seed"
    done
  done
done
/usr/bin/python3 "$(dirname "$0")/pipeline_compare.py" "$out" "$ms" "${seeds[@]}"
