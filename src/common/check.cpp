// The fatal reporter: prints who failed and where, then aborts every rank. The GPU-only build
// (no MPI, LEAP_HAVE_MPI undefined) reports the process and aborts it alone.
#include "common/check.h"

#ifdef LEAP_HAVE_MPI
#include <mpi.h>
#endif
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

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

#ifdef LEAP_HAVE_MPI
namespace {

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// A non-zero rank's last words, sent to rank 0; the wait is bounded because rank 0 may be
// blocked in a collective this rank will never join.
void tell_rank0(const std::string& line) {
  constexpr auto kGrace = std::chrono::seconds(5);
  MPI_Request req;
  if (MPI_Isend(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kFatalReportTag, MPI_COMM_WORLD, &req) !=
      MPI_SUCCESS)
    return;
  const auto deadline = std::chrono::steady_clock::now() + kGrace;
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Rank 0 now aborts the job with this message; if it does not within the grace, we do.
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace
#endif

void report_fatal(const char* file, int line, const std::string& message) {
  char text[4096];
  std::snprintf(text, sizeof text, "%s at %s:%d: %s", describe_self().c_str(), file, line, message.c_str());
  std::fprintf(stderr, "[leap] FATAL %s\n", text);
  std::fflush(stderr);
#ifdef LEAP_HAVE_MPI
  if (mpi_running()) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) tell_rank0(text);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#endif
  std::abort();
}

void poll_fatal_reports() {
#ifdef LEAP_HAVE_MPI
  if (!mpi_running()) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kFatalReportTag, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return;
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  std::string text(static_cast<size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, kFatalReportTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::fprintf(stderr, "[leap] rank 0 stops the job: %s\n", text.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
#endif
}

}  // namespace leap
