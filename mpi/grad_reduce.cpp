// MPI gradient sum and the replica checksum.
#include "mpi/grad_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

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

uint64_t backend_checksum(backend::Backend& backend, const float* data, size_t n, size_t chunk_floats) {
  std::vector<float> host(std::min(n, chunk_floats));
  uint64_t h = kFnv1aBasis;
  for (size_t at = 0; at < n; at += host.size()) {
    const size_t len = std::min(host.size(), n - at);
    backend.download(host.data(), data + at, len);
    h = fnv1a_floats(host.data(), len, h);
  }
  return h;
}

Status check_replicas_identical(const float* params, size_t n, MPI_Comm comm) {
  return check_replicas_identical(checksum(params, n), comm);
}

Status check_replicas_identical(uint64_t mine, MPI_Comm comm) {
  int size = 0;
  MPI_CHECK(MPI_Comm_size(comm, &size));
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
