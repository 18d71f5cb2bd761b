// RankSlices: ZeRO's unit of communication, a piece of a flat float buffer cut into one slice per
// rank: slice r is (*counts)[r] floats at piece + (*displs)[r]. The MPI and NCCL collectives
// (mpi/shard_collectives.h, cuda/nccl_comm.h) take lists of them, so that one call, and on NCCL
// one group and one wait, carries a whole gradient bucket.
#pragma once

#include <vector>

namespace leap {

struct RankSlices {
  float* piece = nullptr;
  const std::vector<int>* counts = nullptr;
  const std::vector<int>* displs = nullptr;
};

}  // namespace leap
