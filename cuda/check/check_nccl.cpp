// `leap_gpu_check nccl`: a one-rank NCCL communicator on device 0 (NCCL cannot put two ranks on
// one GPU; several GPUs would need several processes). It checks that the communicator comes up
// non-blocking, that a grouped in-place sum of slices written on the compute stream leaves them
// unchanged (the sum over one rank), and times that sum for a ~124M-float gradient.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <vector>

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
  std::fprintf(stderr,
               "one-rank NCCL: init %.2f s, sum of %lld floats in 3 slices %.3f ms, %zu wrong\n",
               init_s, floats, per_sum_ms, wrong);
  be.free_floats(dev);
  if (wrong != 0)
    r.mark_failed();
  else
    r.set("pass", true);
  return r;
#endif
}

}  // namespace leap::cuda::check
