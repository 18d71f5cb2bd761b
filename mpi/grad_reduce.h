// Gradient reduction over the policy group on the CPU backend (MPI). docs/design.md: gradients are
// SUMMED, not averaged: each rank has already divided its loss by the global normaliser, so the
// sum equals the gradient of one big batch however the samples were split across ranks.
// The NCCL path (CUDA backend) keeps the same contract.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/status.h"

namespace leap::mpi {

// In-place sum of `n` floats across `comm`, in chunks so that no single message exceeds the
// int count limit of MPI and large buffers pipeline through the transport.
void allreduce_sum(float* data, size_t n, MPI_Comm comm, size_t chunk_floats = size_t{1} << 24);

// Sum of a double across `comm` (loss statistics, normalisers).
double allreduce_sum(double value, MPI_Comm comm);

// A checksum of the parameters (bitwise, order-sensitive), compared across `comm`. Replicas
// must be bit-identical after every step; on a mismatch this returns an internal error naming
// the ranks that disagree with rank 0 of `comm`.
Status check_replicas_identical(const float* params, size_t n, MPI_Comm comm);
// The same with this rank's checksum already taken (checksum(), or backend_checksum()).
Status check_replicas_identical(uint64_t mine, MPI_Comm comm);
uint64_t checksum(const float* data, size_t n);
// checksum() of n floats in `backend`'s memory, downloaded `chunk_floats` at a time into one
// host buffer: a device's 7B weights are never copied to the host whole (28 GiB a rank).
uint64_t backend_checksum(backend::Backend& backend, const float* data, size_t n,
                          size_t chunk_floats = size_t{1} << 24);

}  // namespace leap::mpi
