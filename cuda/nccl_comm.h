// NcclComm: one NCCL communicator over a group of ranks (one GPU each), the in-place sum of
// gradient slices, and ZeRO's reduce-scatter and all-gather, on the context's comm stream; the
// sums in fp32, or in bf16 through a staging buffer (enable_bf16). It knows nothing of MPI: the caller creates the
// unique id on one rank and hands it to the others (mpi/nccl_grad_reduce.h does it over MPI).
//
// Hangs become errors: the communicator is non-blocking, and every wait (initialisation, the
// enqueue of a group, the completion of the comm stream) polls ncclCommGetAsyncError and
// cudaStreamQuery against a timeout; on an error or a timeout the communicator is aborted
// (ncclCommAbort) and the Status says which. After that the object is broken: every further
// call fails at once.
//
// Ordering: sum_async() makes the comm stream wait on an event recorded on the compute stream at
// the call, so a bucket is reduced as soon as the kernels that wrote it are done, while later
// backward kernels keep running on compute. wait() returns when the comm stream is idle.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "common/rank_slices.h"
#include "common/status.h"
#include "cuda/bf16_weights.h"
#include "cuda/cuda_context.h"
#include "cuda/device_buffer.h"

namespace leap::cuda {

struct FloatSlice {
  float* data = nullptr;
  size_t n = 0;
};

class NcclComm {
 public:
  // Joins rank `rank` of `nranks` to the communicator of `id`, on ctx's device.
  static Expected<std::unique_ptr<NcclComm>> create(CudaContext& ctx, const ncclUniqueId& id,
                                                    int rank, int nranks, double timeout_s);
  static ncclUniqueId make_unique_id();
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  // Sums (sum_async, reduce_scatter_async) travel as bf16 from now on (optim.grad_comm_dtype):
  // each call's values are rounded into a staging buffer of `staging_floats` bf16 values on the
  // comm stream, reduced as ncclBfloat16 and widened back into place (for the reduce-scatter, this
  // rank's slices only); a call larger than the staging goes in parts of its size, each its own
  // NCCL group. The all-gather stays fp32 (but see set_bf16_weights).
  void enable_bf16(size_t staging_floats);
  bool bf16() const { return bf16_staging_ > 0; }
  // Enqueues the in-place ncclSum of every slice (one NCCL group) on the comm stream, after the
  // work issued on the compute stream so far.
  Status sum_async(const std::vector<FloatSlice>& slices);
  // ZeRO's collectives over pieces cut into per-rank slices (common/rank_slices.h), in place, all
  // the pieces in one NCCL group enqueued like sum_async: reduce_scatter_async leaves the group's
  // sum of this rank's slice of each piece in it (ncclReduce to each slice's rank);
  // allgather_async gives every rank every rank's slices (ncclBroadcast from each).
  Status reduce_scatter_async(const std::vector<RankSlices>& pieces);
  Status allgather_async(const std::vector<RankSlices>& pieces);
  // The all-gather of a piece in a model's bf16 matrices (optim.master_weights = optimizer)
  // carries their bf16 values (ncclBfloat16, half the bytes) into their bf16 buffer; `weights`
  // (the backend's) must outlive the communicator.
  void set_bf16_weights(const Bf16Weights* weights) { bf16_weights_ = weights; }
  // Waits until every enqueued collective has finished, or fails (error or timeout: aborted).
  Status wait();

 private:
  NcclComm(CudaContext& ctx, int rank, int nranks, double timeout_s)
      : ctx_(&ctx), rank_(rank), nranks_(nranks), timeout_s_(timeout_s) {}
  // Polls until NCCL no longer reports ncclInProgress for this communicator.
  Status wait_enqueued(const char* what);
  // One NCCL group of a per-rank call (reduce or broadcast) over the slices of the pieces.
  Status slices_async(bool reduce, const std::vector<RankSlices>& pieces);
  // A range of fp32 values summed in bf16: all-reduced (root < 0) or reduced to `root`.
  struct Bf16Part {
    float* data;
    size_t n;
    int root;
  };
  // The parts (each at most the staging's size) through the staging buffer, in as few NCCL
  // groups as the staging allows.
  Status bf16_sums_async(const std::vector<Bf16Part>& parts, const char* what);
  Status fail(const std::string& why);

  CudaContext* ctx_;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, nranks_ = 1;
  double timeout_s_ = 0;
  bool broken_ = false;
  size_t bf16_staging_ = 0;  // 0: sums in fp32
  const Bf16Weights* bf16_weights_ = nullptr;
  DeviceBuffer staging_;     // on the comm stream
};

}  // namespace leap::cuda
