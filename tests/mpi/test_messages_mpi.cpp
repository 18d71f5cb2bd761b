// Under mpirun -np 4: typed messages cross ranks intact (any-source pulls included), the
// gradient sum equals the hand-computed sum, and diverged replicas are detected and named.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "backend/cpu_backend.h"
#include "mpi/agree.h"
#include "mpi/grad_reduce.h"
#include "mpi/messages.h"

namespace leap::mpi {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

TEST(MessagesMpi, PullFromAnySource) {
  const int rank = world_rank(), size = world_size();
  if (rank == 0) {
    std::vector<int> seen(static_cast<size_t>(size), 0);
    for (int i = 1; i < size; ++i) {
      int from = -1;
      auto req = recv<SandboxResults>(MPI_ANY_SOURCE, MPI_COMM_WORLD, &from);
      ASSERT_TRUE(req.has_value());
      EXPECT_EQ(req->free_slots, from * 10);
      seen[static_cast<size_t>(from)]++;
      SandboxJobs jobs;
      jobs.jobs.push_back({from, from + 1, "answer for " + std::to_string(from)});
      send(jobs, from, MPI_COMM_WORLD);
    }
    for (int i = 1; i < size; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], 1);
  } else {
    send(SandboxResults{{}, rank * 10}, 0, MPI_COMM_WORLD);
    auto jobs = recv<SandboxJobs>(0, MPI_COMM_WORLD);
    ASSERT_TRUE(jobs.has_value());
    ASSERT_EQ(jobs->jobs.size(), 1u);
    EXPECT_EQ(jobs->jobs[0].uid, rank);
    EXPECT_EQ(jobs->jobs[0].answer, "answer for " + std::to_string(rank));
  }
}

TEST(MessagesMpi, BroadcastFromRoot) {
  Control c;
  if (world_rank() == 0) c = Control{Control::Kind::kTrain, 12, 3};
  broadcast(c, 0, MPI_COMM_WORLD);
  EXPECT_EQ(c.kind, Control::Kind::kTrain);
  EXPECT_EQ(c.step, 12);
  EXPECT_EQ(c.turn, 3);
}

TEST(GradReduceMpi, SumMatchesHandComputed) {
  const int rank = world_rank(), size = world_size();
  const size_t n = 1000;
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(rank + 1) * static_cast<float>(i % 7);
  allreduce_sum(g.data(), n, MPI_COMM_WORLD, /*chunk_floats=*/128);  // several chunks
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  for (size_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(g[i], ranks_sum * static_cast<float>(i % 7)) << i;
  EXPECT_DOUBLE_EQ(allreduce_sum(0.5 * rank, MPI_COMM_WORLD), 0.5 * size * (size - 1) / 2);
}

// The checksum of a backend's weights, downloaded a chunk at a time (a device's are never copied
// to the host whole), is the checksum of the whole buffer, for chunks that divide it or not.
TEST(GradReduceMpi, AChunkedBackendChecksumIsTheWholeBuffersChecksum) {
  backend::CpuBackend cpu(1);
  std::vector<float> p(1000);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i) * 0.37f - 11.0f;
  const uint64_t whole = checksum(p.data(), p.size());
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, size_t{1000}, size_t{4096}})
    EXPECT_EQ(backend_checksum(cpu, p.data(), p.size(), chunk), whole) << chunk;
  p[999] = std::nextafter(p[999], 0.f);
  EXPECT_NE(backend_checksum(cpu, p.data(), p.size(), 7), whole);
}

TEST(GradReduceMpi, DivergedReplicaIsNamed) {
  const int rank = world_rank();
  std::vector<float> p(64, 1.0f);
  EXPECT_TRUE(check_replicas_identical(p.data(), p.size(), MPI_COMM_WORLD).is_ok());
  if (rank == 2) p[5] = std::nextafter(1.0f, 2.0f);  // one ulp
  Status st = check_replicas_identical(p.data(), p.size(), MPI_COMM_WORLD);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("rank(s) 2 differs"), std::string::npos) << st.message();
}

TEST(AgreeMpi, EveryRankGetsTheFirstFailure) {
  const int rank = world_rank();
  EXPECT_TRUE(agree(Status::ok(), MPI_COMM_WORLD).is_ok());
  Status mine = rank >= 2 ? invalid_input("model file on rank " + std::to_string(rank) + " is truncated") : Status::ok();
  Status all = agree(mine, MPI_COMM_WORLD);
  ASSERT_FALSE(all.is_ok());
  EXPECT_EQ(all.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(all.message(), "rank 2: model file on rank 2 is truncated");
}

}  // namespace
}  // namespace leap::mpi
