// ZeRO stages 0, 1 and 2 side by side on the CPU backend (MpiShardCollectives), in one run: the per-rank bytes
// of the training state (weights, gradient, AdamW moments) as glibc counts them, beside leap
// plan's figure, and the optimizer step's wall time (slowest rank, median of the timed steps).
// Each rank runs its micro-batches, then the stage's sum and update, as `leap train` does.
//
//   scripts/mpirun_local.sh 2 build/benchmarks/bench_zero [steps]
//   scripts/mpirun_local.sh 4 build/benchmarks/bench_zero [steps]
//
// The model (8.9M parameters, 8 layers, a 2k vocabulary) is small enough for 4 ranks on a 2-core
// machine and large enough for the heap's bookkeeping not to matter. Its layers hold 88% of the
// parameters, as a 7B model's hold 86%: stage 2's extra buffers (one layer, the embedding and LM
// head) weigh about what they weigh there.
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "backend/cpu_backend.h"
#include "common/rng.h"
#include "model/memory_plan.h"
#include "model/optimizer.h"
#include "model/token_batch.h"
#include "model/transformer.h"
#include "mpi/grad_reduce.h"
#include "mpi/zero_gradients.h"
#include "mpi/zero_shard.h"

namespace {

using namespace leap;

int64_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

model::ModelConfig bench_config() {
  model::ModelConfig c;
  c.model_type = "qwen2";
  c.vocab_size = 2048;
  c.hidden_size = 256;
  c.intermediate_size = 1024;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 32;
  c.max_position_embeddings = 256;
  c.qkv_bias = true;
  return c;
}

constexpr int kMicroBatches = 2, kSeqs = 2, kTokens = 64;

void micro_batch(model::Transformer& m, int rank, int step, int i) {
  Rng rng(7919 * static_cast<uint64_t>(step) + 31 * static_cast<uint64_t>(i) + static_cast<uint64_t>(rank));
  std::vector<std::vector<int32_t>> seqs(kSeqs, std::vector<int32_t>(kTokens));
  for (auto& s : seqs)
    for (auto& t : s) t = static_cast<int32_t>(rng.below(2048));
  const auto batch = model::TokenBatch::from_sequences(seqs);
  std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), dlp(lp.size(), -1e-3f);
  if (!m.forward(batch, lp.data()).ok()) std::abort();
  m.backward(dlp.data());
}

struct Result {
  int64_t state_bytes = 0;  // this rank's: model + gradient + optimizer (+ stage 2's shard)
  uint64_t planned = 0;     // leap plan's weights + master_weights + gradients + optimizer_state
  double step_ms = 0;       // median over steps of the slowest rank's step
  std::vector<float> final_params;
};

Result run_stage(int stage, int steps, MPI_Comm comm) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  backend::CpuBackend be(1);
  Result r;
  const int64_t before = heap_in_use();
  {
    model::Transformer m(bench_config(), be);
    m.init_random(3, 0.05f);
    std::unique_ptr<mpi::ZeroPlan> plan;
    mpi::MpiShardCollectives collectives(comm);
    std::unique_ptr<mpi::ShardedGradients> sharded;
    std::optional<std::vector<std::pair<size_t, size_t>>> shard;
    if (stage >= 1) {
      plan = std::make_unique<mpi::ZeroPlan>(mpi::make_zero_plan(m.layout(), rank, world));
      shard = plan->owned();
    }
    if (stage == 2) {
      sharded = std::make_unique<mpi::ShardedGradients>(*plan, m.layout(), be, collectives);
      m.set_gradient_stream(sharded.get());
    }
    model::OptimConfig oc;
    oc.lr = 1e-3;
    model::AdamW opt(oc, m, shard);
    r.state_bytes = heap_in_use() - before;
    std::vector<double> times;
    for (int step = 0; step <= steps; ++step) {  // step 0 warms up
      MPI_Barrier(comm);
      const auto t0 = std::chrono::steady_clock::now();
      const int passes = mpi::backward_passes(m, kMicroBatches, comm);
      m.zero_grad();
      for (int i = 0; i < passes; ++i) micro_batch(m, rank, step, i);
      if (stage == 0) {
        mpi::allreduce_sum(m.grads(), m.num_params(), comm);
        opt.step();
      } else if (stage == 1) {
        mpi::zero1_step(m, opt, *plan, collectives);
      } else {
        mpi::zero2_step(m, opt, *plan, collectives);
      }
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (step > 0) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    r.step_ms = times[times.size() / 2];
    r.final_params.assign(m.params(), m.params() + m.num_params());
  }
  model::PlanInput in;
  in.model = bench_config();
  in.zero_stage = stage;
  in.policy_ranks = world;
  for (const auto& item : model::plan_policy_rank(in).items)
    if (item.kind == "weights" || item.kind == "master_weights" || item.kind == "gradients" ||
        item.kind == "optimizer_state")
      r.planned += item.bytes;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<Result> results;
  for (int stage : {0, 1, 2}) results.push_back(run_stage(stage, steps, MPI_COMM_WORLD));
  // The largest rank's state (ranks differ by a few floats of the shard).
  for (auto& r : results) {
    MPI_Allreduce(MPI_IN_PLACE, &r.state_bytes, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  }
  if (rank == 0) {
    std::printf("ZeRO on %d rank(s): %zu parameters, %d micro-batches of %d x %d tokens a rank, %d timed steps\n\n",
                world, model::ParameterLayout(bench_config()).total(), kMicroBatches, kSeqs, kTokens, steps);
    std::printf("| stage | state per rank (MiB) | planned (MiB) | against stage 0 | step (ms, median) | against stage 0 | "
                "weights vs stage 0 (rel. L2) |\n|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < results.size(); ++s) {
      const auto& r = results[s];
      double num = 0, den = 0;
      for (size_t i = 0; i < r.final_params.size(); ++i) {
        const double d = static_cast<double>(r.final_params[i]) - results[0].final_params[i];
        num += d * d;
        den += static_cast<double>(results[0].final_params[i]) * results[0].final_params[i];
      }
      std::printf("| %zu | %.2f | %.2f | %.3fx | %.1f | %.2fx | %.2g |\n", s, r.state_bytes / 1048576.0,
                  r.planned / 1048576.0, static_cast<double>(r.state_bytes) / results[0].state_bytes, r.step_ms,
                  r.step_ms / results[0].step_ms, std::sqrt(num / den));
    }
  }
  MPI_Finalize();
  return 0;
}
