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
                              const ZeroShard* zero, MPI_Comm policy, double grad_multiplier) {
  if (zero) {
    // A reducer armed on the backward would have summed the layers already (NCCL): never both.
    LEAP_CHECK(reducer == nullptr, "ZeRO steps with a gradient reducer (" << reducer->name() << ") as well");
    if (model.gradient_stream()) {
      LEAP_CHECK(grad_multiplier == 1.0, "ZeRO stage 2 cannot defer the loss normaliser to the step");
      return zero2_step(model, optimizer, *zero->plan, *zero->comm);
    }
    return zero1_step(model, optimizer, *zero->plan, *zero->comm, zero->overlap, grad_multiplier);
  }
  if (reducer) {
    Status st = reducer->sum(model);
    LEAP_CHECK(st.is_ok(), "gradient sum (" << reducer->name() << ") failed: " << st.message());
  } else {
    allreduce_sum(model.grads(), model.num_params(), policy);
  }
  return optimizer.step({}, nullptr, grad_multiplier);
}

}  // namespace leap::mpi
