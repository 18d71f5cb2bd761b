// How gradients travel between the policy ranks (optim.grad_comm_dtype), for the gradient sum
// (grad_reducer.h) and ZeRO's reduce-scatter (shard_collectives.h): fp32, or bf16 for half the
// bytes. bf16 rounds each rank's gradient and every partial sum (MPI: bf16_sum.h; NCCL:
// ncclBfloat16 through a device staging buffer of staging_floats values, one layer's gradient,
// which leap plan counts; a larger call goes in parts of that size). Accumulation over
// micro-batches stays fp32 on every path.
#pragma once

#include <cstddef>
#include <string>

namespace leap::mpi {

struct GradComm {
  bool bf16 = false;
  size_t staging_floats = 0;
};

// The setting for a model whose layers hold `layer_floats` parameters each.
inline GradComm grad_comm(const std::string& dtype, size_t layer_floats) {
  return {dtype == "bf16", layer_floats};
}

}  // namespace leap::mpi
