// Gradients sent as bf16 over MPI (optim.grad_comm_dtype = bf16, the CPU backend): values travel
// as bf16 bits (MPI_UINT16_T, half the bytes of fp32), and a user-defined MPI op adds two of them
// in fp32 and rounds the sum to bf16 (nearest even), as NCCL's ncclBfloat16 sum does at each hop.
// So each rank's gradient is rounded once, and every partial sum of the reduction once more; the
// result is widened back to fp32. The op is commutative; for a given group size and message
// size MPI reduces in a fixed order, so the result is the same on every rank and in every run.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leap::mpi {

class MpiBf16Sum {
 public:
  MpiBf16Sum();
  ~MpiBf16Sum();  // frees the op, unless MPI is finalized already
  MpiBf16Sum(const MpiBf16Sum&) = delete;
  MpiBf16Sum& operator=(const MpiBf16Sum&) = delete;

  // The op over MPI_UINT16_T buffers of bf16 bits.
  MPI_Op op() const { return op_; }
  // In-place sum of n floats over comm in bf16, in chunks of at most chunk values (the staging
  // is one chunk of bf16 bits).
  void allreduce(float* data, size_t n, MPI_Comm comm, size_t chunk = size_t{1} << 24) const;

 private:
  MPI_Op op_ = MPI_OP_NULL;
};

}  // namespace leap::mpi
