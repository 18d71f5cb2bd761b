// main() for GoogleTest programs that run under mpirun: every rank runs every test; only rank 0
// prints the report, and any rank's failure fails the process (so mpirun, and ctest, fail).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;  // FUNNELED, as `leap train` asks: the streaming pipeline generates on a thread
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Other ranks print only their failures (brief mode), so a failure on rank 3 is not lost.
  if (rank != 0) GTEST_FLAG_SET(brief, true);
  int failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !failed) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
