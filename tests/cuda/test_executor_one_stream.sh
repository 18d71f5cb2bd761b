#!/usr/bin/env bash
# The GPU executor's one-stream rule (cuda/gpu_executor.h), checked on its source because no
# GPU runs in CI: no copy or fill on the legacy default stream (cudaMemcpy, cudaMemset), every
# asynchronous call and launch names stream_, and no result of an event or flush call is
# dropped. A kernel on the executor's non-blocking stream is not ordered after the legacy
# stream, so a regression here reads stale inputs or guard bytes on a GPU.
set -u
src="${LEAP_SOURCE_DIR:?}/cuda/gpu_executor.cpp"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# Comments and messages may name the calls they rule out: both are dropped first.
code=$(sed -e 's:"[^"]*"::g' -e 's://.*$::' "$src")
if grep -nE '\bcuda(Memcpy|Memset|Memcpy2D|Memset2D|DeviceSynchronize)\s*\(' <<<"$code"; then
  bad "a copy, fill or device-wide wait off the executor's stream (use the Async form on stream_)"
fi
# Each asynchronous call or launch, joined onto one line up to its ';', must pass stream_.
calls=$(tr '\n' ' ' <<<"$code" | grep -oE '\bcuda(MemcpyAsync|MemsetAsync|EventRecord|LaunchKernel)\s*\([^;]*;')
[[ -n "$calls" ]] || bad "found no asynchronous calls at all (has the file moved?)"
while IFS= read -r c; do
  [[ -z "$c" ]] && continue
  [[ "$c" == *stream_* ]] || bad "not on stream_: $c"
done <<<"$calls"
# A statement that starts with an event or flush call drops its result.
if grep -nE '^\s*(cudaEventRecord|cudaEventElapsedTime|cudaMemsetAsync\(flush_|cudaMalloc\(&flush_)' <<<"$code"; then
  bad "an unchecked event, flush or allocation call (its error must become SANDBOX_ERROR)"
fi
[[ $fail == 0 ]] && echo "ok: every copy, fill, launch and event of the executor is on stream_"
exit $fail
