// MPI gradient sum and the replica checksum.
#include "mpi/grad_reduce.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/check.h"
#include "common/fnv_hash.h"

namespace leap::mpi {

void allreduce_sum(float* data, size_t n, MPI_Comm comm, size_t chunk_floats) {
  for (size_t off = 0; off < n; off += chunk_floats) {
    int count = static_cast<int>(std::min(chunk_floats, n - off));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + off, count, MPI_FLOAT, MPI_SUM, comm));
  }
}

double allreduce_sum(double value, MPI_Comm comm) {
  double out = 0;
  MPI_CHECK(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_SUM, comm));
  return out;
}

uint64_t checksum(const float* data, size_t n) { return fnv1a_floats(data, n); }

Status check_replicas_identical(const float* params, size_t n, MPI_Comm comm) {
  int size = 0, rank = 0;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  uint64_t mine = checksum(params, n);
  std::vector<uint64_t> all(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm));
  std::string bad;
  for (int r = 1; r < size; ++r)
    if (all[static_cast<size_t>(r)] != all[0]) bad += (bad.empty() ? "" : ", ") + std::to_string(r);
  if (bad.empty()) return Status::ok();
  return internal_error(fmt::format("policy replicas diverged: parameter checksum of policy rank(s) {} differs "
                                    "from policy rank 0 ({:016x})",
                                    bad, all[0]));
}

}  // namespace leap::mpi
