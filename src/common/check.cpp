// The fatal reporter: prints who failed and where, then aborts every rank. The GPU-only build
// (no MPI, LEAP_HAVE_MPI undefined) reports the process and aborts it alone.
#include "common/check.h"

#ifdef LEAP_HAVE_MPI
#include <mpi.h>
#endif
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace leap {

std::string describe_self() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
#ifdef LEAP_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return "rank " + std::to_string(rank) + " on " + host;
  }
#endif
  return std::string("process ") + std::to_string(getpid()) + " on " + host;
}

void report_fatal(const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "[leap] FATAL %s at %s:%d: %s\n", describe_self().c_str(), file, line,
               message.c_str());
  std::fflush(stderr);
#ifdef LEAP_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::abort();
}

}  // namespace leap
