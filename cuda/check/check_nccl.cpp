// `leap_gpu_check nccl`: a one-rank NCCL communicator on device 0 (NCCL cannot put two ranks on
// one GPU; several GPUs would need several processes). It checks that the communicator comes up
// non-blocking, that a grouped in-place sum of slices written on the compute stream leaves them
// unchanged (the sum over one rank), and times that sum for a ~124M-float gradient; then ZeRO's
// reduce-scatter and all-gather (NcclComm::reduce_scatter_async, allgather_async) over the same
// buffer cut into pieces of at most 2^27 floats, as mpi::make_zero_plan cuts it: over one rank
// they too must leave it unchanged, and their time is the per-call overhead of a ZeRO step.
// Last, a buffer whose first half is bf16 only (Backend::alloc_weights): uploaded, it holds the
// bf16 rounding, and its all-gather (bf16, then fp32) leaves it unchanged.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/bf16.h"
#include "cuda/check/checks.h"
#include "cuda/cuda_backend.h"
#ifdef LEAP_HAVE_NCCL
#include "cuda/nccl_comm.h"
#endif

namespace leap::cuda::check {

Expected<JsonRecord> run_nccl(const CheckArgs& args) {
#ifndef LEAP_HAVE_NCCL
  (void)args;
  return unsupported("this build has no NCCL (pass -DNCCL_ROOT=... to cmake)");
#else
  LEAP_ASSIGN_OR_RETURN(long long floats, args.integer("floats"));
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, 0));
  CudaBackend be(*ctx);
  const auto t0 = std::chrono::steady_clock::now();
  LEAP_ASSIGN_OR_RETURN(auto comm, NcclComm::create(*ctx, NcclComm::make_unique_id(), 0, 1, 60.0));
  const double init_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t n = static_cast<size_t>(floats);
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.25f - 7.0f;
  float* dev = be.alloc_floats(n);
  be.upload(dev, host.data(), n);
  // Three slices, as the reducer's per-layer buckets are.
  const std::vector<FloatSlice> slices = {
      {dev, n / 3}, {dev + n / 3, n / 3}, {dev + 2 * (n / 3), n - 2 * (n / 3)}};
  JsonRecord r;
  r.set("init_s", init_s).set("floats", floats);
  LEAP_RETURN_IF_ERROR(comm->sum_async(slices));
  LEAP_RETURN_IF_ERROR(comm->wait());
  std::vector<float> back(n);
  be.download(back.data(), dev, n);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += back[i] != host[i];
  r.set("wrong_entries", static_cast<long long>(wrong));
  // Timing: the one-rank sum is a device copy at most; it shows the per-call overhead.
  const int reps = 10;
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    LEAP_RETURN_IF_ERROR(comm->sum_async(slices));
    LEAP_RETURN_IF_ERROR(comm->wait());
  }
  const double per_sum_ms =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() * 1e3 / reps;
  r.set("sum_ms", per_sum_ms);
  // ZeRO's collectives over the pieces, after a compute-stream write of the whole buffer.
  be.add_forward(dev, dev, dev, n);  // doubles every entry just before, on the compute stream
  const size_t piece = size_t{1} << 27;
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<std::vector<int>> counts;
  for (size_t at = 0; at < n; at += piece) counts.push_back({static_cast<int>(std::min(piece, n - at))});
  const std::vector<int> displs = {0};
  std::vector<RankSlices> pieces;
  for (size_t k = 0; k < counts.size(); ++k) pieces.push_back({dev + k * piece, &counts[k], &displs});
  for (int pass = 0; pass < 2; ++pass) {  // all the pieces in one group, as a ZeRO bucket is
    LEAP_RETURN_IF_ERROR(pass == 0 ? comm->reduce_scatter_async(pieces) : comm->allgather_async(pieces));
    LEAP_RETURN_IF_ERROR(comm->wait());
  }
  const double zero_ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count() * 1e3;
  be.download(back.data(), dev, n);
  size_t zero_wrong = 0;
  for (size_t i = 0; i < n; ++i) zero_wrong += back[i] != 2.0f * host[i];
  r.set("zero_collectives_ms", zero_ms).set("zero_wrong_entries", static_cast<long long>(zero_wrong));
  wrong += zero_wrong;
  std::fprintf(stderr,
               "one-rank NCCL: init %.2f s, sum of %lld floats in 3 slices %.3f ms, %zu wrong; ZeRO "
               "reduce-scatter + all-gather %.3f ms, %zu wrong\n",
               init_s, floats, per_sum_ms, wrong - zero_wrong, zero_ms, zero_wrong);
  be.free_floats(dev);
  // A model whose matrices are bf16 only (optim.master_weights = optimizer): the all-gather of
  // its matrices goes as ncclBfloat16 from their bf16 buffer, of its fp32 tail as fp32 (both
  // unchanged over one rank), on CUDA virtual memory.
  comm->set_bf16_weights(&be.bf16_weights());
  const size_t part = n / 2;
  float* w = be.alloc_weights(n, part);
  be.upload(w, host.data(), n);
  std::vector<float> rounded(n);
  be.download(rounded.data(), w, n);
  const std::vector<int> in_part = {static_cast<int>(std::min(piece, part))},
                         in_tail = {static_cast<int>(std::min(piece, n - part))};
  LEAP_RETURN_IF_ERROR(
      comm->allgather_async({{w, &in_part, &displs}, {w + part, &in_tail, &displs}}));
  LEAP_RETURN_IF_ERROR(comm->wait());
  be.download(back.data(), w, n);
  size_t bf16_wrong = 0, not_rounded = 0;
  for (size_t i = 0; i < n; ++i) {
    bf16_wrong += back[i] != rounded[i];
    not_rounded +=
        i < part ? rounded[i] != bf16_to_f32(f32_to_bf16(host[i])) : rounded[i] != host[i];
  }
  be.free_floats(w);
  r.set("bf16_weights_wrong_entries", static_cast<long long>(bf16_wrong + not_rounded));
  std::fprintf(stderr,
               "bf16-only weights: %zu not held as bf16 rounding after upload, %zu changed by the "
               "all-gather\n",
               not_rounded, bf16_wrong);
  wrong += bf16_wrong + not_rounded;
  if (wrong != 0)
    r.mark_failed();
  else
    r.set("pass", true);
  return r;
#endif
}

}  // namespace leap::cuda::check
