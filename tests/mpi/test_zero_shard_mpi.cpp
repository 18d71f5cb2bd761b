// ZeRO stage 1 (mpi/zero_shard.h) against the replicated step, on however many ranks this runs
// (ctest runs it on 1, 2 and 4): every rank computes the gradient of its own sequences; the
// replicated step all-reduces it and updates every parameter, the sharded step reduce-scatters
// it, updates this rank's shard (norm and clipping over all shards) and all-gathers the weights.
// After 1 step the weights agree to a relative error (||a - b|| / ||a||) of 1e-6; after 20 steps
// the error measured is printed and checked at 1e-5. So are stage 1 with its reduce-scatter
// overlapped with the backward, and stage 2 (mpi/zero_gradients.h), with ranks holding different
// numbers of micro-batches. The plan covers every float once, and AdamW's shard holds 1/world of
// the moments. Clipping is active (grad_clip below the norm), so a wrong global norm shows. A
// checkpoint written by the ranks in parallel holds the sharded run's exact state, and loads
// into a replicated optimizer and into another number of ranks' shards; sft.save_to's export,
// written by every rank, replaces its folder whole. Gradients communicated
// in bf16 (optim.grad_comm_dtype) are checked against the roundings they make and against fp32.
// fp32 masters kept in the optimizer's shard beside bf16 matrices (optim.master_weights =
// optimizer) are checked against the fp32 step, after a checkpoint too.
#include <gtest/gtest.h>
#include <malloc.h>
#include <mpi.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "backend/cpu_backend.h"
#include "common/fs_util.h"
#include "common/rng.h"
#include "model/memory_plan.h"
#include "model/token_batch.h"
#include "mpi/grad_reduce.h"
#include "io/checkpoint_dir.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "common/bf16.h"
#include "mpi/agree.h"
#include "mpi/bf16_sum.h"
#include "mpi/grad_reducer.h"
#include "mpi/checkpoint_write.h"
#include "mpi/zero_gradients.h"
#include "mpi/zero_shard.h"

namespace leap::mpi {
namespace {

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.vocab_size = 101;
  c.hidden_size = 32;
  c.intermediate_size = 56;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 64;
  c.model_type = "qwen2";
  c.qkv_bias = true;
  return c;
}

int rank_of(MPI_Comm c) { int r; MPI_Comm_rank(c, &r); return r; }
int size_of(MPI_Comm c) { int s; MPI_Comm_size(c, &s); return s; }

// One backward of a log-likelihood on this rank's own random sequences (micro-batch `micro`
// of step `step`): adds to the gradient.
void backward_pass(model::Transformer& m, int rank, int step, int micro = 0) {
  Rng rng(1000 * static_cast<uint64_t>(step) + 100 * static_cast<uint64_t>(micro) + static_cast<uint64_t>(rank));
  std::vector<std::vector<int32_t>> seqs(2);
  for (auto& s : seqs) {
    s.resize(8 + rng.below(9));
    for (auto& t : s) t = static_cast<int32_t>(rng.below(101));
  }
  const auto batch = model::TokenBatch::from_sequences(seqs);
  std::vector<float> lp(static_cast<size_t>(batch.B) * batch.T), dlp(lp.size(), -0.05f);
  ASSERT_TRUE(m.forward(batch, lp.data()).ok());
  m.backward(dlp.data());
}

// This rank's gradient for step `step`: one micro-batch.
void gradient(model::Transformer& m, int rank, int step) {
  m.zero_grad();
  backward_pass(m, rank, step);
}

// ||a - b|| / ||a|| over all parameters (the relative error of the issue), and the largest
// elementwise |a - b| / max(|a|, 1e-3) (reported: an entry whose gradient is near Adam's eps
// moves by a different amount when its sum is rounded in another order).
std::pair<double, double> rel_diff(const float* a, const float* b, size_t n) {
  double num = 0, den = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(a[i]) * a[i];
    worst = std::max(worst, std::fabs(d) / std::max(1e-3, std::fabs(static_cast<double>(a[i]))));
  }
  return {std::sqrt(num / den), worst};
}

// A sharded run against the replicated one, step by step: the norms agree, clipping is active,
// and the weights' distance after the first and the last step is printed and bounded (1e-6 after
// one step, 1e-5 after 20); every rank ends with the same weights.
struct AgainstReplicated {
  std::pair<double, double> after_one, after_last;
  void step(int step, const model::StepStats& a, const model::StepStats& b, double clip,
            model::Transformer& replicated, model::Transformer& sharded) {
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-6 * a.grad_norm) << "step " << step;
    EXPECT_GT(a.grad_norm, clip) << "clipping must be active for the test to see the norm";
    const auto d = rel_diff(replicated.params(), sharded.params(), replicated.num_params());
    if (step == 0) after_one = d;
    after_last = d;
  }
  void finish(const std::string& what, model::Transformer& sharded, MPI_Comm comm) const {
    EXPECT_TRUE(check_replicas_identical(sharded.params(), sharded.num_params(), comm).is_ok());
    if (rank_of(comm) == 0)
      std::printf("%s, %d rank(s): relative error to the replicated step %.3g after 1 step, %.3g after 20 "
                  "(largest elementwise %.3g and %.3g)\n",
                  what.c_str(), size_of(comm), after_one.first, after_last.first, after_one.second,
                  after_last.second);
    EXPECT_LE(after_one.first, 1e-6);
    EXPECT_LE(after_last.first, 1e-5);
  }
};

// What the comparisons with the replicated step share: two copies of one random model (the
// replicated run's and the sharded run's), the optimizer settings (clipping by the global norm
// active), this rank's plan (pieces of at most 700 floats), the collectives and both optimizers.
struct Twins {
  // bf16: the sharded run's collectives carry bf16 (optim.grad_comm_dtype). sharded_gradient:
  // kNone for stage 2, whose model is built without a flat gradient, as leap train builds it.
  Twins(backend::Backend& be, const model::ModelConfig& c, MPI_Comm comm, bool bf16 = false,
        model::GradientBuffer sharded_gradient = model::GradientBuffer::kFlat)
      : replicated(c, be), sharded(c, be, sharded_gradient), oc(settings()),
        plan(make_zero_plan(sharded.layout(), rank_of(comm), size_of(comm), 700)), collectives(comm, bf16),
        full(oc, replicated), shard(oc, sharded, plan.owned()) {
    replicated.init_random(5, 0.1f);
    sharded.init_random(5, 0.1f);
  }
  static model::OptimConfig settings() {
    model::OptimConfig o;
    o.lr = 3e-3;
    o.weight_decay = 0.1;
    o.grad_clip = 0.05;  // below the gradient norms here: clipping by the global norm is active
    return o;
  }
  model::Transformer replicated, sharded;
  model::OptimConfig oc;
  ZeroPlan plan;
  MpiShardCollectives collectives;
  model::AdamW full, shard;
};

TEST(ZeroShard, PlanCoversEveryFloatOnceAndEvenly) {
  backend::CpuBackend be(1);
  model::Transformer m(tiny_config(), be);
  for (int world : {1, 2, 3, 4}) {
    std::vector<int> seen(m.num_params(), 0);
    size_t most = 0, least = m.num_params();
    for (int r = 0; r < world; ++r) {
      const ZeroPlan plan = make_zero_plan(m.layout(), r, world, 1000);  // small pieces: many cuts
      size_t mine = 0;
      for (const auto& [off, n] : plan.owned()) {
        for (size_t i = off; i < off + n; ++i) ++seen[i];
        mine += n;
      }
      most = std::max(most, mine);
      least = std::min(least, mine);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; })) << world << " ranks";
    EXPECT_LE(most - least, make_zero_plan(m.layout(), 0, world, 1000).pieces.size()) << world << " ranks";
  }
}

TEST(ZeroShard, ShardedMomentsAreWhatThePlanCounts) {
  // AdamW's allocation for this rank's shard, as glibc counts it, against leap plan's figure:
  // the moments, and with optim.master_weights = optimizer (a model with bf16 matrices) the fp32
  // masters too.
  const int world = size_of(MPI_COMM_WORLD), rank = rank_of(MPI_COMM_WORLD);
  backend::CpuBackend be(1);
  model::ModelConfig c = tiny_config();
  c.vocab_size = 4096;  // a large enough state for the heap's bookkeeping not to matter
  for (bool masters : {false, true}) {
    model::Transformer m(
        c, be, model::GradientBuffer::kFlat,
        masters ? model::WeightStorage::kBf16Matrices : model::WeightStorage::kFp32);
    const ZeroPlan plan = make_zero_plan(m.layout(), rank, world);
    const struct mallinfo2 before = mallinfo2();
    model::AdamW shard(model::OptimConfig{}, m, plan.owned());
    EXPECT_EQ(shard.masters() != nullptr, masters);
    const struct mallinfo2 after = mallinfo2();
    const double measured = static_cast<double>((after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd));
    model::PlanInput in;
    in.model = c;
    in.zero_stage = 1;
    in.policy_ranks = world;
    in.masters_in_optimizer = masters;
    double planned = 0;
    for (const auto& item : model::plan_policy_rank(in).items)
      if (item.kind == "optimizer_state" || (masters && item.kind == "master_weights"))
        planned += static_cast<double>(item.bytes);
    EXPECT_NEAR(measured, planned, 0.10 * planned)
        << "rank " << rank << " of " << world << ", masters " << masters;
  }
}

// The floats of the shard's compact state (masters, moments) at their flat offsets, 0 elsewhere.
std::vector<float> spread(const model::AdamW& opt, const float* state, size_t total) {
  std::vector<float> flat(total, 0.0f);
  for (size_t k = 0; k < opt.shard().size(); ++k)
    std::copy(state + opt.state_offset(k), state + opt.state_offset(k) + opt.shard()[k].second,
              flat.begin() + static_cast<std::ptrdiff_t>(opt.shard()[k].first));
  return flat;
}

// optim.master_weights = optimizer: the model keeps its matrices in bf16 only and AdamW keeps the
// fp32 masters of its shard (stages 1 and 2). From the same bf16 weights, one sharded step gives
// the masters the replicated fp32 step's weights (bit for bit on 1 and 2 ranks, where the sums
// run in one order; 1e-6 on more) and the model exactly their rounding. After 20 steps the two
// runs differ by what computing with bf16 weights changes (printed, bounded), the matrices still
// hold bf16 values, and every rank has the same weights. A checkpoint restores the masters
// exactly, into another shard and into a replicated fp32 model alike.
TEST(ZeroShard, MastersInTheOptimizerBesideBf16Weights) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = size_of(comm);
  backend::CpuBackend be(1);
  const model::ModelConfig c = tiny_config();
  const model::OptimConfig oc = Twins::settings();
  for (int stage : {1, 2}) {
    model::Transformer replicated(c, be);
    model::Transformer sharded(
        c, be, stage == 2 ? model::GradientBuffer::kNone : model::GradientBuffer::kFlat,
        model::WeightStorage::kBf16Matrices);
    sharded.init_random(5, 0.1f);
    const size_t P = sharded.num_params(), nd = sharded.layout().decay_size();
    auto holds_bf16 = [&](const float* w) {
      size_t off = 0;
      for (size_t i = 0; i < nd; ++i) off += w[i] != bf16_to_f32(f32_to_bf16(w[i]));
      return off;
    };
    EXPECT_EQ(holds_bf16(sharded.params()), 0u) << "init_random's matrices are not rounded";
    size_t vectors_kept = 0;
    for (size_t i = nd; i < P; ++i)
      vectors_kept += sharded.params()[i] == 1.0f || sharded.params()[i] == 0.0f;
    EXPECT_EQ(vectors_kept, P - nd) << "the norms and biases are fp32";
    be.copy(replicated.params(), sharded.params(), P);  // the same (bf16) starting weights
    const ZeroPlan plan = make_zero_plan(sharded.layout(), rank, world, 700);
    MpiShardCollectives collectives(comm);
    model::AdamW full(oc, replicated), shard(oc, sharded, plan.owned());
    ASSERT_EQ(full.masters(), nullptr);
    ASSERT_NE(shard.masters(), nullptr);
    std::unique_ptr<ShardedGradients> grads;
    if (stage == 2) {
      grads = std::make_unique<ShardedGradients>(plan, sharded.layout(), be, collectives);
      sharded.set_gradient_stream(grads.get());
    }
    double after_last = 0;
    for (int step = 0; step < 20; ++step) {
      gradient(replicated, rank, step);
      allreduce_sum(replicated.grads(), P, comm);
      full.step();
      sharded.zero_grad();
      backward_pass(sharded, rank, step);
      if (stage == 1)
        zero1_step(sharded, shard, plan, collectives);
      else
        zero2_step(sharded, shard, plan, collectives);
      if (step == 0) {
        const std::vector<float> masters = spread(shard, shard.masters(), P);
        double num = 0, den = 0;
        size_t not_rounding = 0;
        for (const auto& [off, n] : plan.owned())
          for (size_t i = off; i < off + n; ++i) {
            const double d = static_cast<double>(masters[i]) - replicated.params()[i];
            num += d * d;
            den += static_cast<double>(replicated.params()[i]) * replicated.params()[i];
            const float want = i < nd ? bf16_to_f32(f32_to_bf16(masters[i])) : masters[i];
            not_rounding += sharded.params()[i] != want;
          }
        num = allreduce_sum(num, comm);
        den = allreduce_sum(den, comm);
        if (world <= 2) {
          EXPECT_EQ(num, 0.0) << "stage " << stage
                              << ": the masters are not the replicated step's weights";
        }
        EXPECT_LE(std::sqrt(num / den), 1e-6) << "stage " << stage;
        EXPECT_EQ(not_rounding, 0u)
            << "stage " << stage << ": the model does not hold the masters' rounding";
        EXPECT_GT(rel_diff(replicated.params(), sharded.params(), P).first, 0.0)
            << "nothing was rounded";
      }
      after_last = rel_diff(replicated.params(), sharded.params(), P).first;
    }
    EXPECT_EQ(holds_bf16(sharded.params()), 0u)
        << "stage " << stage << ": a matrix holds a value bf16 has not";
    EXPECT_TRUE(check_replicas_identical(sharded.params(), P, comm).is_ok());
    if (rank == 0)
      std::printf(
          "masters in the optimizer, bf16 weights, stage %d, %d rank(s): relative error to the "
          "fp32 replicated run %.3g after 20 steps\n",
          stage, world, after_last);
    EXPECT_LE(after_last, 1e-2) << "stage " << stage;
    if (stage == 2) continue;

    // The checkpoint: every rank writes its masters; read back into the same shard (the masters
    // exactly, the weights their rounding), and into a replicated fp32 model (the masters are its
    // weights, exactly).
    auto run =
        from_root(rank == 0 ? Expected<std::string>(::testing::TempDir() + "/leap_masters_ckpt_" +
                                                    std::to_string(::getpid()))
                            : Expected<std::string>(std::string()),
                  comm);
    ASSERT_TRUE(run.has_value());
    const io::CheckpointRequest req{*run, 20, nlohmann::json::object(), 1, "", 4096};
    const Status written = write_checkpoint(comm, &req, sharded, shard, &plan);
    ASSERT_TRUE(written.is_ok()) << written.message();
    MPI_Barrier(comm);
    const std::string dir = *run + "/checkpoints/" + io::checkpoint_dir_name(20);
    model::Transformer again(c, be, model::GradientBuffer::kFlat,
                             model::WeightStorage::kBf16Matrices);
    model::AdamW again_opt(oc, again, plan.owned());
    auto st = io::load_checkpoint(dir, again, again_opt);
    ASSERT_TRUE(st.has_value()) << st.status().message();
    EXPECT_TRUE(std::equal(again.params(), again.params() + P, sharded.params()));
    EXPECT_TRUE(std::equal(again_opt.masters(), again_opt.masters() + again_opt.state_floats(),
                           shard.masters()));
    EXPECT_TRUE(std::equal(again_opt.m(), again_opt.m() + again_opt.state_floats(), shard.m()));
    model::Transformer fp32(c, be);
    model::AdamW fp32_opt(oc, fp32);
    st = io::load_checkpoint(dir, fp32, fp32_opt);
    ASSERT_TRUE(st.has_value()) << st.status().message();
    const std::vector<float> masters = spread(shard, shard.masters(), P);
    size_t differ = 0;
    for (const auto& [off, n] : plan.owned())
      for (size_t i = off; i < off + n; ++i) differ += fp32.params()[i] != masters[i];
    EXPECT_EQ(differ, 0u) << "the checkpoint's fp32 weights are not the masters";
    MPI_Barrier(comm);
    if (rank == 0) std::filesystem::remove_all(*run);
    MPI_Barrier(comm);
  }
}

TEST(ZeroShard, ShardedStepMatchesTheReplicatedOne) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = size_of(comm);
  backend::CpuBackend be(1);
  Twins t(be, tiny_config(), comm);
  EXPECT_LE(t.shard.state_floats(), t.sharded.num_params() / static_cast<size_t>(world) + t.plan.pieces.size());
  AgainstReplicated check;
  for (int step = 0; step < 20; ++step) {
    gradient(t.replicated, rank, step);
    gradient(t.sharded, rank, step);
    allreduce_sum(t.replicated.grads(), t.replicated.num_params(), comm);
    const model::StepStats a = t.full.step();
    const model::StepStats b = zero1_step(t.sharded, t.shard, t.plan, t.collectives);
    check.step(step, a, b, t.oc.grad_clip, t.replicated, t.sharded);
  }
  check.finish("stage 1", t.sharded, comm);

  // A checkpoint written by every rank in parallel (mpi/checkpoint_write.h), each rank its own
  // slices, read back (io::load_checkpoint):
  //  - into a replicated optimizer (every rank): the weights are the sharded run's bit for bit,
  //    the moments the replicated run's to the weights' tolerance (bit for bit on 1 or 2 ranks);
  //  - into a 3-rank plan's shard (a resume onto another number of ranks): that shard's moments
  //    are the replicated optimizer's, exactly;
  //  - the bf16 export is the weights rounded to bf16.
  // Then a missing rank file is refused, naming the set.
  auto run = from_root(rank == 0 ? Expected<std::string>(::testing::TempDir() + "/leap_zero_ckpt_" +
                                                         std::to_string(::getpid()))
                                 : Expected<std::string>(std::string()),
                       comm);
  ASSERT_TRUE(run.has_value());
  // Shards of at most 4 kB: the export has more shards than there are ranks, each rank writing some.
  const io::CheckpointRequest req{*run, 20, nlohmann::json::object(), 1, "", 4096};
  const Status written = write_checkpoint(comm, &req, t.sharded, t.shard, &t.plan);
  ASSERT_TRUE(written.is_ok()) << written.message();
  MPI_Barrier(comm);
  const std::string dir = *run + "/checkpoints/" + io::checkpoint_dir_name(20);
  model::Transformer back(tiny_config(), be), resharded(tiny_config(), be);
  model::AdamW back_opt(t.oc, back);
  const ZeroPlan other = make_zero_plan(resharded.layout(), rank % 3, 3, 700);
  model::AdamW other_opt(t.oc, resharded, other.owned());
  for (auto [m, o] : {std::pair{&back, &back_opt}, std::pair{&resharded, &other_opt}}) {
    auto st = io::load_checkpoint(dir, *m, *o);
    ASSERT_TRUE(st.has_value()) << st.status().message();
    EXPECT_EQ((*st)["step"], 20);
    EXPECT_EQ(o->steps_taken(), 20);
    EXPECT_TRUE(std::equal(m->params(), m->params() + m->num_params(), t.sharded.params()));
  }
  double diff2 = 0, ref2 = 0;
  for (const float* base : {t.full.m(), t.full.v()}) {
    const float* got = base == t.full.m() ? back_opt.m() : back_opt.v();
    const float* sub = base == t.full.m() ? other_opt.m() : other_opt.v();
    for (size_t i = 0; i < t.sharded.num_params(); ++i) {
      diff2 += (static_cast<double>(got[i]) - base[i]) * (static_cast<double>(got[i]) - base[i]);
      ref2 += static_cast<double>(base[i]) * base[i];
    }
    // The 3-rank shard holds exactly what the replicated load holds at its ranges.
    for (size_t k = 0; k < other_opt.shard().size(); ++k) {
      const auto [off, n] = other_opt.shard()[k];
      EXPECT_TRUE(std::equal(sub + other_opt.state_offset(k), sub + other_opt.state_offset(k) + n, got + off));
    }
  }
  // Resumed onto as many ranks as wrote it, as `leap train` resumes under ZeRO: each rank reads
  // the weights of its own shard only (nothing else of them reaches the model), then the
  // all-gather fills in the rest, bit for bit.
  {
    model::Transformer own(tiny_config(), be);
    model::AdamW own_opt(t.oc, own, t.plan.owned());
    auto st = io::load_checkpoint(dir, own, own_opt, /*weights_of_shard_only=*/true);
    ASSERT_TRUE(st.has_value()) << st.status().message();
    std::vector<char> mine(own.num_params(), 0);
    for (const auto& [off, n] : t.plan.owned()) std::fill(mine.begin() + off, mine.begin() + off + n, 1);
    size_t owned_same = 0, others_zero = 0, others = 0;
    for (size_t i = 0; i < own.num_params(); ++i) {
      if (mine[i]) {
        owned_same += own.params()[i] == t.sharded.params()[i];
      } else {
        ++others;
        others_zero += own.params()[i] == 0.0f;
      }
    }
    EXPECT_EQ(owned_same, own_opt.state_floats());
    EXPECT_EQ(others_zero, others) << "weights outside the shard were read";
    if (world > 1) {
      EXPECT_GT(others, 0u);
    }
    allgather_weights(own, t.plan, t.collectives);
    EXPECT_TRUE(std::equal(own.params(), own.params() + own.num_params(), t.sharded.params()));
    EXPECT_TRUE(std::equal(own_opt.m(), own_opt.m() + own_opt.state_floats(), t.shard.m()));
  }
  EXPECT_GT(ref2, 0);
  EXPECT_LE(std::sqrt(diff2 / ref2), 1e-5);
  if (world <= 2) {
    EXPECT_EQ(diff2, 0) << "1 or 2 ranks sum in one order: the moments are bit-identical";
  }
  const model::ModelExport exp = model::plan_model_export(t.sharded.layout(), model::DType::kBF16, 4096);
  EXPECT_GT(exp.shards.size(), static_cast<size_t>(world));
  for (size_t k = 0; k < exp.shards.size(); ++k) EXPECT_TRUE(std::filesystem::exists(dir + "/" + exp.shard_name(k)));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  std::vector<float> exported(t.sharded.num_params());
  ASSERT_TRUE(model::read_weights(dir, t.sharded, exported.data()).is_ok());
  size_t off_by = 0;
  for (size_t i = 0; i < exported.size(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(model::f32_to_bf16(t.sharded.params()[i])) << 16;
    float rounded;
    std::memcpy(&rounded, &bits, sizeof rounded);
    off_by += exported[i] != rounded;
  }
  EXPECT_EQ(off_by, 0u) << "the export is the bf16 rounding of the weights";
  MPI_Barrier(comm);
  if (rank == 0) {
    std::filesystem::remove(dir + "/" + io::rank_state_name(world - 1, world));
    model::Transformer m(tiny_config(), be);
    model::AdamW o(t.oc, m);
    auto st = io::load_checkpoint(dir, m, o);
    ASSERT_FALSE(st.has_value());
    EXPECT_NE(st.status().message().find("the checkpoint is incomplete"), std::string::npos) << st.status().message();
    std::filesystem::remove_all(*run);
  }
  MPI_Barrier(comm);
}

// sft.save_to's export (export_model): every rank writes its shards into the staging folder and
// rank 0 swaps it in, so the folder is the new export whole (bf16, more shards than ranks), the
// earlier export's shards are gone, its README stays, and nothing is left beside it.
TEST(ParallelExport, EveryRankWritesItsShardsAndTheFolderIsReplacedWhole) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm);
  backend::CpuBackend be(1);
  model::Transformer m(tiny_config(), be);
  m.init_random(11, 0.1f);
  auto dir = from_root(rank == 0 ? Expected<std::string>(::testing::TempDir() + "/leap_export_" +
                                                         std::to_string(::getpid()) + "/policy")
                                 : Expected<std::string>(std::string()),
                       comm);
  ASSERT_TRUE(dir.has_value());
  const std::string parent = std::filesystem::path(*dir).parent_path().string();
  if (rank == 0) {  // an earlier export of other weights, in more shards, with a README beside it
    model::Transformer earlier(tiny_config(), be);
    earlier.init_random(12, 0.1f);
    ASSERT_TRUE(model::save_model(*dir, earlier, model::DType::kF32, 2048).is_ok());
    ASSERT_TRUE(write_file_atomic(*dir + "/README.md", "notes").is_ok());
  }
  MPI_Barrier(comm);
  const ExportRequest req{*dir, model::DType::kBF16, 4096, ""};
  const Status written = export_model(comm, rank == 0 ? &req : nullptr, m);
  ASSERT_TRUE(written.is_ok()) << written.message();
  MPI_Barrier(comm);
  const model::ModelExport plan = model::plan_model_export(m.layout(), model::DType::kBF16, 4096);
  const model::ModelExport earlier_plan = model::plan_model_export(m.layout(), model::DType::kF32, 2048);
  EXPECT_GT(plan.shards.size(), static_cast<size_t>(size_of(comm)));
  ASSERT_GT(earlier_plan.shards.size(), plan.shards.size());
  for (size_t k = 0; k < plan.shards.size(); ++k) EXPECT_TRUE(std::filesystem::exists(*dir + "/" + plan.shard_name(k)));
  for (size_t k = plan.shards.size(); k < earlier_plan.shards.size(); ++k)
    EXPECT_FALSE(std::filesystem::exists(*dir + "/" + earlier_plan.shard_name(k))) << "an earlier shard survived";
  EXPECT_EQ(read_file(*dir + "/README.md").value(), "notes");
  std::vector<float> exported(m.num_params());
  ASSERT_TRUE(model::read_weights(*dir, m, exported.data()).is_ok());
  size_t off_by = 0;
  for (size_t i = 0; i < exported.size(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(model::f32_to_bf16(m.params()[i])) << 16;
    float rounded;
    std::memcpy(&rounded, &bits, sizeof rounded);
    off_by += exported[i] != rounded;
  }
  EXPECT_EQ(off_by, 0u) << "the export is the bf16 rounding of the weights";
  size_t beside = 0;
  for (const auto& e : std::filesystem::directory_iterator(parent)) beside += e.path().filename() != "policy";
  EXPECT_EQ(beside, 0u) << "a staging or .old_ folder was left in " << parent;
  MPI_Barrier(comm);
  if (rank == 0) std::filesystem::remove_all(parent);
  MPI_Barrier(comm);
}

// Stage 1 with its reduce-scatter overlapped with the last micro-batch's backward
// (Zero1Overlap): ranks hold 0, 1 or 2 micro-batches, so in some steps a rank runs no backward
// and makes every call at the step while the others made theirs during the backward. The bucket
// pieces cover the plan once, and the steps match the replicated ones as stage 1's do.
TEST(ZeroShard, StageOneOverlappedWithTheBackwardMatchesTheReplicatedStep) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm);
  backend::CpuBackend be(1);
  Twins t(be, tiny_config(), comm);
  const PieceBuckets buckets = piece_buckets(t.plan, t.sharded.layout());
  std::vector<int> seen(t.plan.pieces.size(), 0);
  for (const auto& layer : buckets.layers)
    for (size_t p : layer) ++seen[p];
  for (size_t p : buckets.rest) ++seen[p];
  EXPECT_EQ(buckets.layers.size(), static_cast<size_t>(tiny_config().num_hidden_layers));
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
      << "every piece in exactly one bucket";
  Zero1Overlap overlap(t.plan, t.sharded.layout(), t.collectives);
  AgainstReplicated check;
  int idle_steps = 0;
  for (int step = 0; step < 20; ++step) {
    const int mine = (rank + step) % 3;  // some steps some ranks (all on one rank) have none
    t.replicated.zero_grad();
    for (int i = 0; i < mine; ++i) backward_pass(t.replicated, rank, step, i);
    allreduce_sum(t.replicated.grads(), t.replicated.num_params(), comm);
    const model::StepStats a = t.full.step();
    t.sharded.zero_grad();
    for (int i = 0; i < mine; ++i) {
      if (i + 1 == mine) overlap.arm(t.sharded);
      backward_pass(t.sharded, rank, step, i);
    }
    idle_steps += mine == 0;
    const model::StepStats b = zero1_step(t.sharded, t.shard, t.plan, t.collectives, &overlap);
    EXPECT_EQ(overlap.overlapped_layers(), mine > 0 ? tiny_config().num_hidden_layers : 0)
        << "step " << step << ": the layers' reduce-scatters started in the backward";
    if (a.grad_norm == 0) continue;  // no rank had a micro-batch: nothing to compare
    check.step(step, a, b, t.oc.grad_clip, t.replicated, t.sharded);
  }
  EXPECT_GT(idle_steps, 0);
  check.finish("stage 1 overlapped with the backward", t.sharded, comm);
}

// Training during the rollout (rl.overlap_training) back-propagates under a loss normaliser of 1
// and defers 1 / N to the step (AdamW::step's gradient multiplier). Through stage 1's shards (the
// norm summed over them, the clip, each shard's update), a gradient 37 times too large stepped
// with multiplier 1/37 is the replicated step.
TEST(ZeroShard, StageOneWithTheNormaliserDeferredToTheStepMatchesTheReplicatedStep) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm);
  backend::CpuBackend be(1);
  Twins t(be, tiny_config(), comm);
  AgainstReplicated check;
  const double k = 37;
  for (int step = 0; step < 20; ++step) {
    t.replicated.zero_grad();
    backward_pass(t.replicated, rank, step, 0);
    allreduce_sum(t.replicated.grads(), t.replicated.num_params(), comm);
    const model::StepStats a = t.full.step();
    t.sharded.zero_grad();
    backward_pass(t.sharded, rank, step, 0);
    for (size_t i = 0; i < t.sharded.num_params(); ++i) t.sharded.grads()[i] *= static_cast<float>(k);
    const model::StepStats b = zero1_step(t.sharded, t.shard, t.plan, t.collectives, nullptr, 1.0 / k);
    check.step(step, a, b, t.oc.grad_clip, t.replicated, t.sharded);
  }
  check.finish("stage 1 with the normaliser deferred to the step", t.sharded, comm);
}

// ZeRO stage 2: the model streams each layer's gradient into ShardedGradients. Ranks hold
// different numbers of micro-batches (1 to 3, changing with the step), so the busiest sets how
// many backward passes everyone runs; the replicated model runs the same micro-batches and
// all-reduces. Stage 2 sums each micro-batch over the ranks as it comes, in another order than
// the replicated sum, so the bound is stage 1's: 1e-6 after one step.
TEST(ZeroShard, StageTwoMatchesTheReplicatedStepWithUnevenMicroBatches) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = size_of(comm);
  backend::CpuBackend be(1);
  for (bool tied : {false, true}) {
    model::ModelConfig c = tiny_config();
    c.tie_word_embeddings = tied;  // tied: the LM head's and the embedding's gradients share the rest buffer
    Twins t(be, c, comm, false, model::GradientBuffer::kNone);
    ShardedGradients grads(t.plan, t.sharded.layout(), be, t.collectives);
    t.sharded.set_gradient_stream(&grads);
    EXPECT_EQ(t.sharded.grads(), nullptr) << "stage 2 keeps no whole gradient";
    AgainstReplicated check;
    for (int step = 0; step < 20; ++step) {
      const int mine = 1 + (rank + step) % 3;
      t.replicated.zero_grad();
      for (int i = 0; i < mine; ++i) backward_pass(t.replicated, rank, step, i);
      allreduce_sum(t.replicated.grads(), t.replicated.num_params(), comm);
      const model::StepStats a = t.full.step();

      const int passes = backward_passes(t.sharded, mine, comm);
      int busiest = 0;
      for (int r = 0; r < world; ++r) busiest = std::max(busiest, 1 + (r + step) % 3);
      EXPECT_EQ(passes, busiest) << "the busiest rank's micro-batches";
      t.sharded.zero_grad();
      for (int i = 0; i < mine; ++i) backward_pass(t.sharded, rank, step, i);
      for (int i = mine; i < passes; ++i) t.sharded.backward_nothing();
      const model::StepStats b = zero2_step(t.sharded, t.shard, t.plan, t.collectives);
      check.step(step, a, b, t.oc.grad_clip, t.replicated, t.sharded);
    }
    check.finish(std::string("stage 2, ") + (tied ? "tied" : "untied") + " embeddings", t.sharded, comm);
  }
}

// The gradient's memory, as glibc counts it, when a model goes from its whole gradient to
// stage 2's shard and two compact buffers: the change must be the plan's (within 10%). On 2 and
// 4 ranks it shrinks; on one rank it grows (the shard is everything, and the two buffers come
// on top), and the plan says so too.
TEST(ZeroShard, StageTwoGradientIsWhatThePlanCounts) {
  const int world = size_of(MPI_COMM_WORLD), rank = rank_of(MPI_COMM_WORLD);
  backend::CpuBackend be(1);
  model::ModelConfig c = tiny_config();
  // Buffers large enough for the heap's bookkeeping not to matter, with layers that outweigh the
  // embedding and LM head as a real model's do.
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.intermediate_size = 1024;
  c.num_hidden_layers = 4;
  model::Transformer m(c, be);
  const ZeroPlan plan = make_zero_plan(m.layout(), rank, world);
  const struct mallinfo2 before = mallinfo2();
  MpiShardCollectives collectives(MPI_COMM_WORLD);
  ShardedGradients grads(plan, m.layout(), be, collectives);
  m.set_gradient_stream(&grads);
  const struct mallinfo2 after = mallinfo2();
  const double measured = static_cast<double>(after.uordblks + after.hblkhd) -
                          static_cast<double>(before.uordblks + before.hblkhd);
  model::PlanInput in;
  in.model = c;
  in.policy_ranks = world;
  auto gradients = [&](int stage) {
    in.zero_stage = stage;
    for (const auto& item : model::plan_policy_rank(in).items)
      if (item.kind == "gradients") return static_cast<double>(item.bytes);
    return 0.0;
  };
  const double planned = gradients(2) - gradients(0);
  if (rank == 0)
    std::printf("stage 2 on %d rank(s): the gradient changed by %.0f bytes, the plan says %.0f\n", world, measured,
                planned);
  EXPECT_NEAR(measured, planned, 0.10 * std::fabs(planned)) << "rank " << rank << " of " << world;
}

}  // namespace
}  // namespace leap::mpi

namespace leap::mpi {
namespace {

// optim.grad_comm_dtype = bf16 over MPI (bf16_sum.h): every rank's values are rounded to bf16 and
// every partial sum once more, so the sum is within (2 ranks - 1) roundings (bf16's unit
// roundoff is 2^-8) of the absolute sum of the terms; with 1 rank it is the rounding itself and with 2 the one hop
// bf16(bf16(a) + bf16(b)), exactly, on every rank. Small integers sum exactly. The reduce-scatter
// carries the same values in its slices.
TEST(GradCommBf16, SumsRoundEachTermAndEachPartialSum) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = size_of(comm);
  const size_t n = 1007;
  Rng rng(100 + static_cast<uint64_t>(rank));
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(rng.normal() * std::pow(10.0, static_cast<double>(i % 7) - 3));
  std::vector<float> all(n * static_cast<size_t>(world));
  MPI_Allgather(x.data(), static_cast<int>(n), MPI_FLOAT, all.data(), static_cast<int>(n), MPI_FLOAT, comm);
  const MpiBf16Sum bf16;
  std::vector<float> got = x;
  bf16.allreduce(got.data(), n, comm, 300);  // in chunks of 300
  EXPECT_TRUE(check_replicas_identical(got.data(), n, comm).is_ok());
  auto b = [](float v) { return bf16_to_f32(f32_to_bf16(v)); };
  size_t rounded = 0;
  std::vector<double> bound(n);  // the roundings' error bound
  for (size_t i = 0; i < n; ++i) {
    double exact = 0, magnitude = 0;
    for (int r = 0; r < world; ++r) {
      exact += all[static_cast<size_t>(r) * n + i];
      magnitude += std::fabs(all[static_cast<size_t>(r) * n + i]);
    }
    bound[i] = (2 * world - 1) * std::ldexp(magnitude, -8);
    EXPECT_LE(std::fabs(got[i] - exact), bound[i]) << i;
    rounded += static_cast<double>(got[i]) != exact;
    if (world == 1) {
      EXPECT_EQ(got[i], b(x[i])) << i;
    } else if (world == 2) {
      EXPECT_EQ(got[i], b(b(all[i]) + b(all[n + i]))) << i;
    }
  }
  EXPECT_GT(rounded, n / 2) << "the sum did not go through bf16";
  std::vector<float> ints(64, static_cast<float>(rank + 1));
  bf16.allreduce(ints.data(), ints.size(), comm);
  for (float v : ints) EXPECT_EQ(v, static_cast<float>(world * (world + 1) / 2));

  // The reduce-scatter in bf16: this rank's slice of a piece cut evenly.
  std::vector<int> counts(static_cast<size_t>(world)), displs(static_cast<size_t>(world));
  for (int r = 0, at = 0; r < world; ++r) {
    counts[static_cast<size_t>(r)] = static_cast<int>(n) / world + (r < static_cast<int>(n) % world ? 1 : 0);
    displs[static_cast<size_t>(r)] = at;
    at += counts[static_cast<size_t>(r)];
  }
  std::vector<float> piece = x;
  MpiShardCollectives collectives(comm, true);
  collectives.reduce_scatter({{piece.data(), &counts, &displs}});
  for (int k = 0; k < counts[static_cast<size_t>(rank)]; ++k) {
    const size_t i = static_cast<size_t>(displs[static_cast<size_t>(rank)] + k);
    if (world <= 2) {
      EXPECT_EQ(piece[i], got[i]) << i;  // one hop at most: the same rounding
    } else {
      EXPECT_NEAR(piece[i], got[i], 2 * bound[i]) << i;  // both within the bound of the exact sum
    }
  }
}

// The three stages with bf16 communication against the fp32 replicated step: close (the
// gradients rounded to bf16 move AdamW's update a little), never identical, and every rank ends
// with the same weights. Stage 2 keeps its running sum in fp32: on one rank its gradient is
// exactly the fp32 sum of each micro-batch's gradient rounded to bf16.
TEST(GradCommBf16, StagesStayCloseToFp32) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = rank_of(comm), world = size_of(comm);
  backend::CpuBackend be(1);
  for (int stage : {0, 1, 2}) {
    Twins t(be, tiny_config(), comm, /*bf16=*/true);
    MpiGradReducer reducer(comm, /*bf16=*/true);
    model::AdamW replica_opt(t.oc, t.sharded);  // stage 0: the sharded twin updates everything
    std::unique_ptr<ShardedGradients> grads;
    if (stage == 2) {
      grads = std::make_unique<ShardedGradients>(t.plan, t.sharded.layout(), be, t.collectives);
      t.sharded.set_gradient_stream(grads.get());
    }
    double after_one = 0, after_last = 0;
    for (int step = 0; step < 5; ++step) {
      t.replicated.zero_grad();
      for (int i = 0; i < 2; ++i) backward_pass(t.replicated, rank, step, i);
      allreduce_sum(t.replicated.grads(), t.replicated.num_params(), comm);
      t.full.step();
      t.sharded.zero_grad();
      for (int i = 0; i < 2; ++i) backward_pass(t.sharded, rank, step, i);
      if (stage == 0) {
        ASSERT_TRUE(reducer.sum(t.sharded).is_ok());
        replica_opt.step();
      } else if (stage == 1) {
        zero1_step(t.sharded, t.shard, t.plan, t.collectives);
      } else {
        zero2_step(t.sharded, t.shard, t.plan, t.collectives);
      }
      const double d = rel_diff(t.replicated.params(), t.sharded.params(), t.sharded.num_params()).first;
      if (step == 0) after_one = d;
      after_last = d;
    }
    EXPECT_TRUE(check_replicas_identical(t.sharded.params(), t.sharded.num_params(), comm).is_ok());
    if (rank == 0)
      std::printf("bf16 communication, stage %d, %d rank(s): relative error to the fp32 replicated step %.3g "
                  "after 1 step, %.3g after 5\n",
                  stage, world, after_one, after_last);
    EXPECT_GT(after_one, 0.0) << "stage " << stage << ": bf16 changed nothing";
    EXPECT_LE(after_one, 2e-3) << "stage " << stage;
    EXPECT_LE(after_last, 1e-2) << "stage " << stage;
  }
  if (world != 1) return;
  // Stage 2's running sum, by hand: each micro-batch's gradient rounded to bf16, summed in fp32.
  Twins t(be, tiny_config(), comm, /*bf16=*/true);
  ShardedGradients grads(t.plan, t.sharded.layout(), be, t.collectives);
  t.sharded.set_gradient_stream(&grads);
  t.sharded.zero_grad();
  std::vector<float> want(t.replicated.num_params(), 0.0f);
  for (int i = 0; i < 3; ++i) {
    t.replicated.zero_grad();
    backward_pass(t.replicated, rank, 0, i);
    for (size_t k = 0; k < want.size(); ++k) want[k] += bf16_to_f32(f32_to_bf16(t.replicated.grads()[k]));
    backward_pass(t.sharded, rank, 0, i);
  }
  // One rank owns everything, in plan.owned() order: the shard is the flat gradient's ranges.
  size_t at = 0, differ = 0;
  for (const auto& [off, count] : t.plan.owned())
    for (size_t k = 0; k < count; ++k) differ += grads.sum()[at++] != want[off + k];
  EXPECT_EQ(differ, 0u) << "stage 2's bf16 running sum is not the fp32 sum of bf16 micro-batches";
}

}  // namespace
}  // namespace leap::mpi
