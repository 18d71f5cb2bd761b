// Collective agreement on a status: allgather the codes, broadcast the first failure's text.
#include "mpi/agree.h"

#include <vector>

#include "common/check.h"

namespace leap::mpi {

namespace {

void bcast_text(std::string* text, int root, MPI_Comm comm) {
  uint64_t n = text->size();
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm));
  text->resize(n);
  MPI_CHECK(MPI_Bcast(text->data(), static_cast<int>(n), MPI_CHAR, root, comm));
}

}  // namespace

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
  bcast_text(&text, first, comm);
  std::string who = size > 1 ? "rank " + std::to_string(first) + ": " : std::string();
  return Status(static_cast<StatusCode>(codes[static_cast<size_t>(first)]), who + text);
}

}  // namespace leap::mpi

namespace leap::mpi {

Expected<std::string> from_root(const Expected<std::string>& mine, MPI_Comm comm) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  int code = rank == 0 ? static_cast<int>(mine.status().code()) : 0;
  MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, comm));
  std::string text;
  if (rank == 0) text = mine.has_value() ? *mine : mine.status().message();
  bcast_text(&text, 0, comm);
  if (code != 0) return Status(static_cast<StatusCode>(code), text);
  return text;
}

}  // namespace leap::mpi
