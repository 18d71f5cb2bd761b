// MpiGradReducer and the choice of reducer by backend.
#include "mpi/grad_reducer.h"

#include <cstring>

#include "mpi/grad_reduce.h"
#ifdef LEAP_HAVE_NCCL
#include "mpi/nccl_grad_reducer.h"
#endif

namespace leap::mpi {

Status MpiGradReducer::sum(model::Transformer& model) {
  if (bf16_)
    bf16_sum_.allreduce(model.grads(), model.num_params(), policy_);
  else
    allreduce_sum(model.grads(), model.num_params(), policy_);
  return Status::ok();
}

Expected<std::unique_ptr<GradReducer>> make_grad_reducer(backend::Backend& backend, MPI_Comm policy,
                                                         double timeout_s, const GradComm& comm) {
  if (std::strcmp(backend.name(), "cuda") != 0) {
    return std::unique_ptr<GradReducer>(new MpiGradReducer(policy, comm.bf16));
  }
#ifdef LEAP_HAVE_NCCL
  LEAP_ASSIGN_OR_RETURN(
      auto r, NcclGradReducer::create(static_cast<cuda::CudaBackend&>(backend), policy, timeout_s, comm));
  return std::unique_ptr<GradReducer>(std::move(r));
#else
  (void)timeout_s;
  return unsupported("backend.name = cuda needs NCCL for the gradient sum; this build has none");
#endif
}

}  // namespace leap::mpi
