// Collective agreement on a status: allgather the codes, broadcast the first failure's text.
#include "mpi/agree.h"

#include <vector>

#include "common/check.h"

namespace leap::mpi {

Status agree(const Status& mine, MPI_Comm comm) {
  int size = 0, rank = 0;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  int code = static_cast<int>(mine.code());
  std::vector<int> codes(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(&code, 1, MPI_INT, codes.data(), 1, MPI_INT, comm));
  int first = -1;
  for (int r = 0; r < size && first < 0; ++r)
    if (codes[static_cast<size_t>(r)] != 0) first = r;
  if (first < 0) return Status::ok();
  std::string text = rank == first ? mine.message() : std::string();
  uint64_t n = text.size();
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, first, comm));
  text.resize(n);
  MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, first, comm));
  std::string who = size > 1 ? "rank " + std::to_string(first) + ": " : std::string();
  return Status(static_cast<StatusCode>(codes[static_cast<size_t>(first)]), who + text);
}

}  // namespace leap::mpi
