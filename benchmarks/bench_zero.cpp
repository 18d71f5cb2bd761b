// ZeRO stages 0, 1 and 2 side by side on the CPU backend (MpiShardCollectives), in one run: the
// per-rank bytes of the training state (weights, gradient, AdamW moments) as glibc counts them,
// beside leap plan's figure, and the optimizer step's wall time (slowest rank, median of the timed
// steps, the stages' steps interleaved). Stage 1 runs twice: its reduce-scatter after the backward,
// and overlapped with the last micro-batch's backward (Zero1Overlap, as `leap train` runs it).
// Stage 2 runs twice too: with fp32 replicas, and with the fp32 masters in the optimizer's shard
// beside bf16 matrices (optim.master_weights = optimizer; on the CPU the weights stay 4 bytes a
// float, so the masters add 1/N, and its weights differ from stage 0's by computing with bf16
// matrices). Each rank runs its micro-batches, then the stage's sum and update, as `leap train`
// does.
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
#include <string>
#include <tuple>
#include <utility>
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

// One stage's training state on this rank, built on its own so that its heap cost is measured.
struct Stage {
  Stage(int stage, bool overlapped, bool masters, backend::Backend& be, MPI_Comm comm)
      : stage(stage),
        label(std::to_string(stage) + (overlapped ? ", overlapped" : "") +
              (masters ? ", masters in the optimizer" : "")),
        collectives(comm) {
    int rank = 0, world = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    const int64_t before = heap_in_use();
    model = std::make_unique<model::Transformer>(
        bench_config(), be,
        stage == 2 ? model::GradientBuffer::kNone : model::GradientBuffer::kFlat,
        masters ? model::WeightStorage::kBf16Matrices : model::WeightStorage::kFp32);
    model->init_random(3, 0.05f);
    std::optional<std::vector<std::pair<size_t, size_t>>> shard;
    if (stage >= 1) {
      plan = std::make_unique<mpi::ZeroPlan>(mpi::make_zero_plan(model->layout(), rank, world));
      shard = plan->owned();
    }
    if (stage == 2) {
      sharded = std::make_unique<mpi::ShardedGradients>(*plan, model->layout(), be, collectives);
      model->set_gradient_stream(sharded.get());
    }
    if (overlapped) overlap = std::make_unique<mpi::Zero1Overlap>(*plan, model->layout(), collectives);
    model::OptimConfig oc;
    oc.lr = 1e-3;
    optimizer = std::make_unique<model::AdamW>(oc, *model, shard);
    state_bytes = heap_in_use() - before;
    model::PlanInput in;
    in.model = bench_config();
    in.zero_stage = stage;
    in.policy_ranks = world;
    in.masters_in_optimizer = masters;
    for (const auto& item : model::plan_policy_rank(in).items)
      if (item.kind == "weights" || item.kind == "master_weights" || item.kind == "gradients" ||
          item.kind == "optimizer_state")
        planned += item.bytes;
  }
  // One optimizer step; the slowest rank's wall time in ms.
  double step(int rank, int step_index, MPI_Comm comm) {
    MPI_Barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    const int passes = mpi::backward_passes(*model, kMicroBatches, comm);
    model->zero_grad();
    for (int i = 0; i < passes; ++i) {
      if (overlap && i + 1 == passes) overlap->arm(*model);
      micro_batch(*model, rank, step_index, i);
    }
    if (stage == 0) {
      mpi::allreduce_sum(model->grads(), model->num_params(), comm);
      optimizer->step();
    } else if (stage == 1) {
      mpi::zero1_step(*model, *optimizer, *plan, collectives, overlap.get());
    } else {
      mpi::zero2_step(*model, *optimizer, *plan, collectives);
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, comm);
    return ms;
  }

  int stage;
  std::string label;
  mpi::MpiShardCollectives collectives;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<mpi::ZeroPlan> plan;
  std::unique_ptr<mpi::ShardedGradients> sharded;
  std::unique_ptr<mpi::Zero1Overlap> overlap;
  std::unique_ptr<model::AdamW> optimizer;
  int64_t state_bytes = 0;  // this rank's: model + gradient + optimizer (+ stage 2's shard)
  uint64_t planned = 0;     // leap plan's weights + master_weights + gradients + optimizer_state
  std::vector<double> times;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  backend::CpuBackend be(1);
  std::vector<std::unique_ptr<Stage>> stages;
  for (auto [stage, overlapped, masters] : {std::tuple{0, false, false},
                                            {1, false, false},
                                            {1, true, false},
                                            {2, false, false},
                                            {2, false, true}})
    stages.push_back(std::make_unique<Stage>(stage, overlapped, masters, be, MPI_COMM_WORLD));
  // Interleaved, so that the machine's load falls on the three alike; step 0 warms up.
  for (int step = 0; step <= steps; ++step)
    for (auto& st : stages) {
      const double ms = st->step(rank, step, MPI_COMM_WORLD);
      if (step > 0) st->times.push_back(ms);
    }
  // The largest rank's state (ranks differ by a few floats of the shard).
  for (auto& st : stages) MPI_Allreduce(MPI_IN_PLACE, &st->state_bytes, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("ZeRO on %d rank(s): %zu parameters, %d micro-batches of %d x %d tokens a rank, %d timed steps "
                "each, interleaved\n\n",
                world, model::ParameterLayout(bench_config()).total(), kMicroBatches, kSeqs, kTokens, steps);
    std::printf("| stage | state per rank (MiB) | planned (MiB) | against stage 0 | step (ms, median) | against stage 0 | "
                "weights vs stage 0 (rel. L2) |\n|---|---|---|---|---|---|---|\n");
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const float* base = stages[0]->model->params();
    for (const auto& st : stages) {
      const float* p = st->model->params();
      double num = 0, den = 0;
      for (size_t i = 0; i < st->model->num_params(); ++i) {
        num += (static_cast<double>(p[i]) - base[i]) * (static_cast<double>(p[i]) - base[i]);
        den += static_cast<double>(base[i]) * base[i];
      }
      std::printf("| %s | %.2f | %.2f | %.3fx | %.1f | %.2fx | %.2g |\n", st->label.c_str(), st->state_bytes / 1048576.0,
                  st->planned / 1048576.0, static_cast<double>(st->state_bytes) / stages[0]->state_bytes,
                  median(st->times), median(st->times) / median(stages[0]->times), std::sqrt(num / den));
    }
  }
  stages.clear();
  MPI_Finalize();
  return 0;
}
