// NcclGradReducer: MPI bootstrap of the NCCL communicator, per-layer buckets during the
// backward, the remainder and the polled wait in sum().
#include "mpi/nccl_grad_reducer.h"

#include <algorithm>
#include <string>

#include "common/check.h"
#include "mpi/grad_buckets.h"

namespace leap::mpi {

Expected<std::unique_ptr<cuda::NcclComm>> join_nccl(cuda::CudaBackend& backend, MPI_Comm policy, double timeout_s,
                                                    const GradComm& comm) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(policy, &rank));
  MPI_CHECK(MPI_Comm_size(policy, &size));
  ncclUniqueId id{};
  if (rank == 0) id = cuda::NcclComm::make_unique_id();
  MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, policy));
  LEAP_ASSIGN_OR_RETURN(auto c, cuda::NcclComm::create(backend.context(), id, rank, size, timeout_s));
  if (comm.bf16) c->enable_bf16(comm.staging_floats);
  return c;
}

Expected<std::unique_ptr<NcclGradReducer>> NcclGradReducer::create(cuda::CudaBackend& backend,
                                                                   MPI_Comm policy,
                                                                   double timeout_s,
                                                                   const GradComm& grad_comm) {
  LEAP_ASSIGN_OR_RETURN(auto comm, join_nccl(backend, policy, timeout_s, grad_comm));
  return std::unique_ptr<NcclGradReducer>(new NcclGradReducer(std::move(comm)));
}

Status NcclGradReducer::start_layer(model::Transformer& model, int l) {
  // The layout never changes: each layer's ranges are worked out once, on the first step.
  if (layer_ranges_.empty()) {
    for (int i = 0; i < model.config().num_hidden_layers; ++i) layer_ranges_.push_back(model.layout().layer_ranges(i));
  }
  LEAP_CHECK(model.grads() != nullptr, "the NCCL gradient reducer needs the flat gradient (no ZeRO stage 2 stream)");
  std::vector<cuda::FloatSlice> slices;
  for (const auto& [off, n] : layer_ranges_.at(static_cast<size_t>(l))) {
    slices.push_back({model.grads() + off, n});
    started_.emplace_back(off, n);
  }
  ++layers_started_;
  return comm_->sum_async(slices);
}

void NcclGradReducer::arm(model::Transformer& model) {
  started_.clear();
  layers_started_ = 0;
  enqueue_error_ = Status::ok();
  model.set_layer_grads_done([this, &model](int l) {
    if (enqueue_error_.is_ok()) enqueue_error_ = start_layer(model, l);
  });
}

Status NcclGradReducer::sum(model::Transformer& model) {
  model.set_layer_grads_done({});
  Status st = enqueue_error_;
  enqueue_error_ = Status::ok();
  // Every rank must issue the same NCCL calls in the same order: layer L-1 down to 0, then the
  // rest. A rank whose backward did not run armed (it held no micro-batch) issues the layers now.
  const int L = model.config().num_hidden_layers;
  if (st.is_ok() && layers_started_ == 0) {
    for (int l = L - 1; l >= 0 && st.is_ok(); --l) st = start_layer(model, l);
  }
  if (st.is_ok() && layers_started_ != L) {
    st = internal_error("gradient buckets out of step: " + std::to_string(layers_started_) +
                        " of " + std::to_string(L) + " layers were reduced");
  }
  if (st.is_ok()) {
    // The gaps between the layers' ranges: embedding, final norm, untied LM head.
    std::vector<cuda::FloatSlice> rest;
    for (const auto& [off, n] : uncovered_ranges(started_, model.num_params())) {
      rest.push_back({model.grads() + off, n});
    }
    st = comm_->sum_async(rest);
  }
  started_.clear();
  layers_started_ = 0;
  if (st.is_ok()) st = comm_->wait();
  return st;
}

}  // namespace leap::mpi
