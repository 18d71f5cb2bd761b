// sum_and_step (see optimizer_step.h).
#include "mpi/optimizer_step.h"

#include "common/check.h"
#include "mpi/grad_reduce.h"

namespace leap::mpi {

void arm_last_backward(model::Transformer& model, GradReducer* reducer, const ZeroShard* zero) {
  if (reducer) reducer->arm(model);
  if (zero && zero->overlap) zero->overlap->arm(model);
}

model::StepStats sum_and_step(model::Transformer& model, model::AdamW& optimizer, GradReducer* reducer,
                              const ZeroShard* zero, MPI_Comm policy) {
  if (zero) {
    // A reducer armed on the backward would have summed the layers already (NCCL): never both.
    LEAP_CHECK(reducer == nullptr, "ZeRO steps with a gradient reducer (" << reducer->name() << ") as well");
    return model.gradient_stream() ? zero2_step(model, optimizer, *zero->plan, *zero->comm)
                                   : zero1_step(model, optimizer, *zero->plan, *zero->comm, zero->overlap);
  }
  if (reducer) {
    Status st = reducer->sum(model);
    LEAP_CHECK(st.is_ok(), "gradient sum (" << reducer->name() << ") failed: " << st.message());
  } else {
    allreduce_sum(model.grads(), model.num_params(), policy);
  }
  return optimizer.step();
}

}  // namespace leap::mpi
