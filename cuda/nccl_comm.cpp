// NcclComm: non-blocking NCCL communicator, grouped in-place sums, polled waits with abort.
#include "cuda/nccl_comm.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "common/check.h"
#include "cuda/cuda_check.h"
#include "cuda/launch_cast.h"

namespace leap::cuda {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// NCCL counts are size_t, but very large single calls gain nothing; 256M floats per call keeps
// each below 1 GiB.
constexpr size_t kMaxFloatsPerCall = size_t{1} << 28;

}  // namespace

ncclUniqueId NcclComm::make_unique_id() {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return id;
}

Expected<std::unique_ptr<NcclComm>> NcclComm::create(CudaContext& ctx, const ncclUniqueId& id,
                                                     int rank, int nranks, double timeout_s) {
  std::unique_ptr<NcclComm> c(new NcclComm(ctx, rank, nranks, timeout_s));
  CUDA_CHECK(cudaSetDevice(ctx.device()));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t rc = ncclCommInitRankConfig(&c->comm_, nranks, id, rank, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    // fail() aborts what NCCL may have allocated before failing (only a non-null handle).
    return c->fail(std::string("ncclCommInitRankConfig failed: ") + ncclGetErrorString(rc));
  }
  LEAP_RETURN_IF_ERROR(c->wait_enqueued("communicator initialisation"));
  return c;
}

// ncclCommAbort is never given a null handle: fail() aborts and clears comm_, so a failed
// initialisation or a failed final wait leaves nothing to abort here.
NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;  // never created, or fail() has aborted it
  // Finish outstanding work first; destroy only a healthy communicator.
  if (!wait().is_ok()) return;  // wait() failed through fail(), which aborted it
  ncclCommFinalize(comm_);
  ncclResult_t state = ncclInProgress;
  const auto t0 = Clock::now();
  while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
         seconds_since(t0) < timeout_s_) {
    std::this_thread::yield();
  }
  if (state == ncclSuccess) {
    ncclCommDestroy(comm_);
    return;
  }
  ncclCommAbort(comm_);  // finalisation failed or timed out; comm_ is still the live handle
}

Status NcclComm::fail(const std::string& why) {
  if (!broken_ && comm_ != nullptr) ncclCommAbort(comm_);
  broken_ = true;
  comm_ = nullptr;
  return internal_error("NCCL (rank " + std::to_string(rank_) + " of " + std::to_string(nranks_) +
                        "): " + why + "; the communicator was aborted");
}

Status NcclComm::wait_enqueued(const char* what) {
  const auto t0 = Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
    if (rc != ncclSuccess) return fail(std::string(what) + ": " + ncclGetErrorString(rc));
    if (state == ncclSuccess) return Status::ok();
    if (state != ncclInProgress) return fail(std::string(what) + ": " + ncclGetErrorString(state));
    if (seconds_since(t0) > timeout_s_) {
      return fail(std::string(what) + " did not complete within " + std::to_string(timeout_s_) +
                  " s (a rank may have died or hung)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclComm::enable_bf16(size_t staging_floats) {
  LEAP_CHECK(staging_floats > 0, "bf16 gradient communication needs a staging buffer");
  bf16_staging_ = std::min(staging_floats, kMaxFloatsPerCall);
  staging_.set_stream(ctx_->comm());
}

Status NcclComm::bf16_sums_async(const std::vector<Bf16Part>& parts, const char* what) {
  auto* stage = staging_.reserve_as<__nv_bfloat16>(bf16_staging_);
  ctx_->comm_waits_for_compute();
  size_t first = 0;
  while (first < parts.size()) {
    // As many parts as the staging holds, back to back: rounded in, summed in one group, widened
    // back. All on the comm stream, so the next batch reuses the staging after this one.
    size_t end = first, used = 0;
    while (end < parts.size() && used + parts[end].n <= bf16_staging_) used += parts[end++].n;
    size_t at = 0;
    for (size_t i = first; i < end; at += parts[i++].n) launch_cast_to_bf16(stage + at, parts[i].data, parts[i].n, ctx_->comm());
    ncclResult_t rc = ncclGroupStart();
    if (rc != ncclSuccess) return fail(std::string("ncclGroupStart: ") + ncclGetErrorString(rc));
    at = 0;
    for (size_t i = first; i < end; at += parts[i++].n) {
      __nv_bfloat16* s = stage + at;
      rc = parts[i].root < 0 ? ncclAllReduce(s, s, parts[i].n, ncclBfloat16, ncclSum, comm_, ctx_->comm())
                             : ncclReduce(s, s, parts[i].n, ncclBfloat16, ncclSum, parts[i].root, comm_, ctx_->comm());
      if (rc != ncclSuccess && rc != ncclInProgress) {
        ncclGroupEnd();
        return fail(std::string(what) + ": " + ncclGetErrorString(rc));
      }
    }
    rc = ncclGroupEnd();
    if (rc != ncclSuccess && rc != ncclInProgress) return fail(std::string("ncclGroupEnd: ") + ncclGetErrorString(rc));
    // The group must be on the stream before the widening kernels are.
    LEAP_RETURN_IF_ERROR(wait_enqueued(what));
    at = 0;
    for (size_t i = first; i < end; at += parts[i++].n)
      if (parts[i].root < 0 || parts[i].root == rank_)
        launch_cast_from_bf16(parts[i].data, stage + at, parts[i].n, ctx_->comm());
    first = end;
  }
  return Status::ok();
}

Status NcclComm::sum_async(const std::vector<FloatSlice>& slices) {
  if (broken_) return internal_error("NCCL communicator was aborted earlier");
  if (bf16_staging_ > 0) {
    std::vector<Bf16Part> parts;
    for (const auto& s : slices)
      for (size_t off = 0; off < s.n; off += bf16_staging_)
        parts.push_back({s.data + off, std::min(bf16_staging_, s.n - off), -1});
    return bf16_sums_async(parts, "enqueueing the bf16 gradient all-reduce");
  }
  ctx_->comm_waits_for_compute();
  ncclResult_t rc = ncclGroupStart();
  if (rc != ncclSuccess) return fail(std::string("ncclGroupStart: ") + ncclGetErrorString(rc));
  for (const auto& s : slices) {
    for (size_t off = 0; off < s.n; off += kMaxFloatsPerCall) {
      const size_t count = std::min(kMaxFloatsPerCall, s.n - off);
      rc =
          ncclAllReduce(s.data + off, s.data + off, count, ncclFloat, ncclSum, comm_, ctx_->comm());
      if (rc != ncclSuccess && rc != ncclInProgress) {
        ncclGroupEnd();
        return fail(std::string("ncclAllReduce: ") + ncclGetErrorString(rc));
      }
    }
  }
  rc = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress) {
    return fail(std::string("ncclGroupEnd: ") + ncclGetErrorString(rc));
  }
  return wait_enqueued("enqueueing the gradient all-reduce");
}

Status NcclComm::slices_async(bool reduce, const std::vector<RankSlices>& pieces) {
  if (broken_) return internal_error("NCCL communicator was aborted earlier");
  for (const auto& p : pieces) {
    if (p.counts->size() != static_cast<size_t>(nranks_) || p.displs->size() != p.counts->size())
      return internal_error("ZeRO collective: counts for " + std::to_string(p.counts->size()) +
                            " ranks, the group has " + std::to_string(nranks_));
  }
  if (reduce && bf16_staging_ > 0) {
    std::vector<Bf16Part> parts;
    for (const auto& p : pieces)
      for (int r = 0; r < nranks_; ++r) {
        const size_t n = static_cast<size_t>((*p.counts)[static_cast<size_t>(r)]);
        float* slice = p.piece + (*p.displs)[static_cast<size_t>(r)];
        for (size_t off = 0; off < n; off += bf16_staging_)
          parts.push_back({slice + off, std::min(bf16_staging_, n - off), r});
      }
    return bf16_sums_async(parts, "enqueueing a bf16 ZeRO reduce-scatter");
  }
  ctx_->comm_waits_for_compute();
  const char* what = reduce ? "ncclReduce" : "ncclBroadcast";
  ncclResult_t rc = ncclGroupStart();
  if (rc != ncclSuccess) return fail(std::string("ncclGroupStart: ") + ncclGetErrorString(rc));
  for (const auto& p : pieces) {
    for (int r = 0; r < nranks_; ++r) {
      // Every rank sees the same counts, so every rank skips the same empty slices.
      const size_t n = static_cast<size_t>((*p.counts)[static_cast<size_t>(r)]);
      float* slice = p.piece + (*p.displs)[static_cast<size_t>(r)];
      // Weights whose matrices are bf16 only: the slice's bf16 elements (ZeroPlan cuts no piece
      // across the end of the matrices, so a slice is all bf16 or all fp32).
      const Bf16Weights::Part bf =
          !reduce && bf16_weights_ ? bf16_weights_->bf16_part(slice, n) : Bf16Weights::Part{};
      if (bf.n > 0 && bf.n != n) {
        ncclGroupEnd();
        return fail("a ZeRO all-gather slice crosses the end of a model's bf16 matrices");
      }
      for (size_t off = 0; off < n; off += kMaxFloatsPerCall) {
        const size_t count = std::min(kMaxFloatsPerCall, n - off);
        rc = reduce     ? ncclReduce(slice + off, slice + off, count, ncclFloat, ncclSum, r, comm_,
                                     ctx_->comm())
             : bf.n > 0 ? ncclBroadcast(bf.bf16 + off, bf.bf16 + off, count, ncclBfloat16, r, comm_,
                                        ctx_->comm())
                        : ncclBroadcast(slice + off, slice + off, count, ncclFloat, r, comm_,
                                        ctx_->comm());
        if (rc != ncclSuccess && rc != ncclInProgress) {
          ncclGroupEnd();
          return fail(std::string(what) + ": " + ncclGetErrorString(rc));
        }
      }
    }
  }
  rc = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress) return fail(std::string("ncclGroupEnd: ") + ncclGetErrorString(rc));
  return wait_enqueued(reduce ? "enqueueing a ZeRO reduce-scatter" : "enqueueing a ZeRO all-gather");
}

Status NcclComm::reduce_scatter_async(const std::vector<RankSlices>& pieces) { return slices_async(true, pieces); }

Status NcclComm::allgather_async(const std::vector<RankSlices>& pieces) { return slices_async(false, pieces); }

Status NcclComm::wait() {
  if (broken_) return internal_error("NCCL communicator was aborted earlier");
  const auto t0 = Clock::now();
  for (;;) {
    cudaError_t q = cudaStreamQuery(ctx_->comm());
    if (q == cudaSuccess) return Status::ok();
    if (q != cudaErrorNotReady) {
      return fail(std::string("the comm stream failed: ") + cudaGetErrorString(q));
    }
    ncclResult_t state = ncclSuccess;
    ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
    if (rc != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
      return fail(std::string("asynchronous error: ") +
                  ncclGetErrorString(rc != ncclSuccess ? rc : state));
    }
    if (seconds_since(t0) > timeout_s_) {
      return fail("the collectives on the comm stream did not finish within " + std::to_string(timeout_s_) +
                  " s (a rank may have died or hung)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace leap::cuda
