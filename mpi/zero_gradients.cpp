// ShardedGradients and the stage-2 step (see zero_gradients.h).
#include "mpi/zero_gradients.h"

#include <algorithm>

#include "common/check.h"
#include "mpi/grad_buckets.h"

namespace leap::mpi {
namespace {

// Where flat offset `at` lands in the compact buffer that concatenates `ranges` (sorted); npos
// when no range holds it.
size_t compact_offset(const std::vector<FloatRange>& ranges, size_t at) {
  size_t before = 0;
  for (const auto& [off, n] : ranges) {
    if (at >= off && at < off + n) return before + (at - off);
    before += n;
  }
  return static_cast<size_t>(-1);
}

}  // namespace

ShardedGradients::ShardedGradients(const ZeroPlan& plan, const model::ParameterLayout& layout,
                                   backend::Backend& backend, ShardCollectives& comm)
    : plan_(&plan), be_(&backend), comm_(&comm), layer_floats_(layout.layer_floats()), rest_floats_(layout.rest_floats()) {
  const size_t me = static_cast<size_t>(plan.rank);
  // This rank's slices, in owned() order, are AdamW's compact moments: a slice's place there.
  const std::vector<FloatRange> owned = plan.owned();
  for (const auto& r : owned) floats_ += r.second;
  sum_ = be_->alloc_floats(floats_);  // zero-initialised
  other_ = spare_ = be_->alloc_floats(layer_floats_);
  auto place_in_sum = [&](size_t p) {
    if (plan.counts[p][me] == 0) return size_t{0};
    return compact_offset(owned, plan.pieces[p].first + static_cast<size_t>(plan.displs[p][me]));
  };
  // Each piece goes to its bucket's compact buffer: a layer's, or the rest's.
  const PieceBuckets buckets = piece_buckets(plan, layout);
  std::vector<FloatRange> covered;
  layer_pieces_.resize(buckets.layers.size());
  for (size_t l = 0; l < buckets.layers.size(); ++l) {
    const std::vector<FloatRange> ranges = layout.layer_ranges(static_cast<int>(l));
    covered.insert(covered.end(), ranges.begin(), ranges.end());
    for (size_t p : buckets.layers[l])
      layer_pieces_[l].push_back({p, compact_offset(ranges, plan.pieces[p].first), place_in_sum(p)});
  }
  const std::vector<FloatRange> rest = uncovered_ranges(covered, layout.total());
  for (size_t p : buckets.rest) {
    const size_t at = compact_offset(rest, plan.pieces[p].first);
    LEAP_CHECK(at != static_cast<size_t>(-1), "ZeRO piece " << p << " is in no layer and not in the rest");
    rest_pieces_.push_back({p, at, place_in_sum(p)});
  }
}

ShardedGradients::~ShardedGradients() {
  be_->free_floats(sum_);
  be_->free_floats(spare_);
}

void ShardedGradients::attach() {
  LEAP_CHECK(in_flight_ == nullptr, "a gradient stream attached during a backward");
  other_ = spare_;  // the model's buffer may have been freed or handed to another stream
}

void ShardedGradients::clear() {
  LEAP_CHECK(in_flight_ == nullptr, "zero_grad() during a backward");
  be_->zero(sum_, floats_);
}

void ShardedGradients::start(const std::vector<Piece>& pieces, float* buffer) {
  // The whole bucket in one call, in place. A bucket always has pieces: a layer's tensors, or
  // the embedding's.
  LEAP_CHECK(!pieces.empty(), "a gradient bucket without ZeRO pieces");
  std::vector<RankSlices> slices;
  for (const Piece& piece : pieces)
    slices.push_back({buffer + piece.in_buffer, &plan_->counts[piece.plan_index], &plan_->displs[piece.plan_index]});
  comm_->reduce_scatter_start(slices);
}

void ShardedGradients::finish(const std::vector<Piece>& pieces, float* buffer, size_t buffer_floats) {
  const size_t me = static_cast<size_t>(plan_->rank);
  comm_->reduce_scatter_finish();
  // The group's sum of this micro-batch joins the running sum in the shard, in fp32, whatever
  // the collective carried (optim.grad_comm_dtype).
  for (const Piece& piece : pieces) {
    const size_t n = static_cast<size_t>(plan_->counts[piece.plan_index][me]);
    float* running = sum_ + piece.in_sum;
    if (n > 0) be_->add_forward(running, running, buffer + piece.in_buffer + plan_->displs[piece.plan_index][me], n);
  }
  be_->zero(buffer, buffer_floats);
}

float* ShardedGradients::layer_done(int l, float* layer_grads) {
  // The previous layer's reduce-scatter ran while this layer's backward did: finish it, which
  // frees its buffer for the next layer, and start this one's.
  if (in_flight_ != nullptr) finish(*in_flight_, other_, layer_floats_);
  in_flight_ = &layer_pieces_.at(static_cast<size_t>(l));
  start(*in_flight_, layer_grads);
  std::swap(layer_grads, other_);
  return layer_grads;
}

void ShardedGradients::rest_done(float* rest_grads) {
  if (in_flight_ != nullptr) finish(*in_flight_, other_, layer_floats_);
  in_flight_ = nullptr;
  start(rest_pieces_, rest_grads);
  finish(rest_pieces_, rest_grads, rest_floats_);
}

int backward_passes(const model::Transformer& model, int mine, MPI_Comm policy) {
  if (model.gradient_stream() == nullptr) return mine;
  int most = mine;
  MPI_CHECK(MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, policy));
  return most;
}

model::StepStats zero2_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            ShardCollectives& comm) {
  const auto* sharded = dynamic_cast<const ShardedGradients*>(model.gradient_stream());
  LEAP_CHECK(sharded != nullptr, "ZeRO stage 2 needs the model's gradient stream to be a ShardedGradients");
  LEAP_CHECK(sharded->floats() == optimizer.state_floats(), "the gradient shard and AdamW's shard differ");
  const model::StepStats s =
      optimizer.step([&comm](double local_sum_squares) { return comm.sum(local_sum_squares); }, sharded->sum());
  allgather_weights(model, plan, comm);
  return s;
}

}  // namespace leap::mpi
