// A program for test_fatal_report.sh: rank 1 fails (LEAP_FATAL) while the other ranks wait.
//   fatal_report_main recv     rank 0 waits for a message from rank 1 (as the coordinator waits
//                              for results): it must notice the failure and stop the job with
//                              rank 1's message;
//   fatal_report_main barrier  rank 0 waits in a collective it cannot leave: rank 1 must abort
//                              the job by itself after its grace period. No case may hang.
#include <mpi.h>

#include <cstring>

#include "common/check.h"
#include "mpi/messages.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool barrier = argc > 1 && std::strcmp(argv[1], "barrier") == 0;
  if (rank == 1) LEAP_FATAL("sandbox engine exploded on purpose");
  if (rank == 0 && !barrier) {
    auto never = leap::mpi::recv<leap::mpi::Control>(1, MPI_COMM_WORLD);
    (void)never;
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;  // unreachable: rank 1 never joins
}
