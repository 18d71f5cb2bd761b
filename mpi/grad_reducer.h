// GradReducer: how a policy replica sums its flat gradient over the policy group; the backend
// decides which (backend.name): MPI on cpu (host memory), NCCL on cuda (device memory).
// docs/design.md's contract holds for both: gradients are SUMMED, each rank having divided its loss
// by the global normaliser already, so the update does not depend on how samples were split.
//
// Use, per optimizer step:
//   reducer.arm(model);        // before the backward that completes the gradient
//   model.backward(...);       // a reducer that overlaps starts on finished layers here
//   reducer.sum(model);        // the rest, then wait: grads() holds the group's sum
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/status.h"
#include "model/transformer.h"
#include "mpi/bf16_sum.h"
#include "mpi/grad_comm.h"

namespace leap::mpi {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  virtual const char* name() const = 0;
  // The next backward of `model` completes the gradient: reductions may start during it.
  virtual void arm(model::Transformer& model) { (void)model; }
  // Sums model.grads() over the group in place (what arm() did not already start), and waits.
  // Fails (an internal error) when the group cannot finish, e.g. a rank died: never hangs.
  virtual Status sum(model::Transformer& model) = 0;
};

// MPI_Allreduce(SUM) of the host gradient, in chunks (grad_reduce.h), or in bf16 (bf16_sum.h).
class MpiGradReducer final : public GradReducer {
 public:
  explicit MpiGradReducer(MPI_Comm policy, bool bf16 = false) : policy_(policy), bf16_(bf16) {}
  const char* name() const override { return bf16_ ? "mpi (bf16)" : "mpi"; }
  Status sum(model::Transformer& model) override;

 private:
  MPI_Comm policy_;
  bool bf16_;
  MpiBf16Sum bf16_sum_;
};

// The reducer for `backend` (its name()): MpiGradReducer for cpu; NCCL for cuda (collective over
// `policy`: every policy rank must call it). timeout_s bounds every NCCL wait.
Expected<std::unique_ptr<GradReducer>> make_grad_reducer(backend::Backend& backend, MPI_Comm policy,
                                                         double timeout_s, const GradComm& comm = {});

}  // namespace leap::mpi
