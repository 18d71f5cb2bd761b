// NcclGradReducer: the CUDA backend's gradient sum over the policy group with NCCL, overlapping
// the backward. Rank 0 of the policy group makes the NCCL unique id and broadcasts it over MPI;
// each rank joins with its own GPU (NCCL cannot put two ranks on one GPU).
//
// Buckets: a transformer layer's parameter gradients are complete as soon as the backward has
// passed that layer (Transformer::set_layer_grads_done), so arm() hooks each finished layer's
// tensors into one NCCL group on the comm stream (after an event on the compute stream) while
// the backward continues with the layers below. sum() reduces what is left (embedding, final
// norm, untied LM head) and waits, polling for asynchronous NCCL errors against the timeout.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/nccl_comm.h"
#include "mpi/grad_buckets.h"
#include "mpi/grad_reducer.h"

namespace leap::mpi {

// A new NCCL communicator over `policy`, one GPU a rank: rank 0 makes the unique id and
// broadcasts it over MPI; its sums in bf16 when `comm` says so. Collective over `policy`.
Expected<std::unique_ptr<cuda::NcclComm>> join_nccl(cuda::CudaBackend& backend, MPI_Comm policy, double timeout_s,
                                                    const GradComm& comm = {});

class NcclGradReducer final : public GradReducer {
 public:
  // Collective over `policy`.
  static Expected<std::unique_ptr<NcclGradReducer>> create(cuda::CudaBackend& backend,
                                                           MPI_Comm policy, double timeout_s,
                                                           const GradComm& comm = {});
  const char* name() const override { return comm_->bf16() ? "nccl (bf16)" : "nccl"; }
  void arm(model::Transformer& model) override;
  Status sum(model::Transformer& model) override;

 private:
  explicit NcclGradReducer(std::unique_ptr<cuda::NcclComm> comm) : comm_(std::move(comm)) {}

  // Enqueues layer l's gradient ranges as one NCCL group.
  Status start_layer(model::Transformer& model, int l);

  std::unique_ptr<cuda::NcclComm> comm_;
  int layers_started_ = 0;
  std::vector<std::pair<size_t, size_t>> started_;  // ranges already enqueued this step
  std::vector<std::vector<FloatRange>> layer_ranges_;  // per layer, from the layout (fixed)
  Status enqueue_error_;                            // first failure inside the layer hook
};

}  // namespace leap::mpi
