// ZeRO stage 1: the shard plan and its collectives (see zero_shard.h).
#include "mpi/zero_shard.h"

#include <algorithm>

#include "common/check.h"

namespace leap::mpi {

ZeroPlan make_zero_plan(const model::ParameterLayout& layout, int rank, int world, size_t max_piece) {
  LEAP_CHECK(world >= 1 && rank >= 0 && rank < world && max_piece > 0);
  ZeroPlan plan;
  plan.rank = rank;
  plan.world = world;
  std::vector<FloatRange> buckets;
  // The bucket order of the overlapped reducer: the last layer's backward finishes first.
  for (int l = layout.config().num_hidden_layers - 1; l >= 0; --l)
    for (const auto& r : layout.layer_ranges(l)) buckets.push_back(r);
  for (const auto& r : uncovered_ranges(buckets, layout.total())) buckets.push_back(r);
  // No piece crosses the end of the matrices: where the model keeps them in bf16 (CUDA,
  // optim.master_weights = optimizer) a piece is all bf16 or all fp32, one dtype to all-gather.
  // (Only a one-layer model has a bucket that crosses it.)
  const size_t nd = layout.decay_size();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto [off, n] = buckets[i];
    if (off < nd && off + n > nd) {
      buckets[i] = {off, nd - off};
      buckets.insert(buckets.begin() + static_cast<std::ptrdiff_t>(i) + 1, {nd, off + n - nd});
    }
  }
  for (const auto& [off, n] : buckets) {
    for (size_t at = 0; at < n; at += max_piece) {
      const size_t len = std::min(max_piece, n - at);
      plan.pieces.emplace_back(off + at, len);
      std::vector<int> counts(static_cast<size_t>(world)), displs(static_cast<size_t>(world));
      size_t start = 0;
      for (int r = 0; r < world; ++r) {
        const size_t c = len / static_cast<size_t>(world) + (static_cast<size_t>(r) < len % static_cast<size_t>(world) ? 1 : 0);
        counts[static_cast<size_t>(r)] = static_cast<int>(c);
        displs[static_cast<size_t>(r)] = static_cast<int>(start);
        start += c;
      }
      plan.counts.push_back(std::move(counts));
      plan.displs.push_back(std::move(displs));
    }
  }
  return plan;
}

PieceBuckets piece_buckets(const ZeroPlan& plan, const model::ParameterLayout& layout) {
  PieceBuckets out;
  std::vector<std::vector<FloatRange>> layers;
  for (int l = 0;; ++l) {
    std::vector<FloatRange> ranges = layout.layer_ranges(l);
    if (ranges.empty()) break;
    layers.push_back(std::move(ranges));
  }
  out.layers.resize(layers.size());
  for (size_t p = 0; p < plan.pieces.size(); ++p) {
    const size_t start = plan.pieces[p].first;
    auto holds = [start](const FloatRange& r) { return start >= r.first && start < r.first + r.second; };
    size_t l = 0;
    while (l < layers.size() && std::none_of(layers[l].begin(), layers[l].end(), holds)) ++l;
    (l < layers.size() ? out.layers[l] : out.rest).push_back(p);
  }
  return out;
}

std::vector<FloatRange> ZeroPlan::owned() const {
  std::vector<FloatRange> out;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const int c = counts[p][static_cast<size_t>(rank)];
    if (c > 0) out.emplace_back(pieces[p].first + static_cast<size_t>(displs[p][static_cast<size_t>(rank)]), c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The plan's pieces `which` (all of them when null) of the flat buffer at `base`, at most
// kPiecesPerCall to a call: on NCCL one group and one wait each (a layer has about a dozen
// pieces).
constexpr size_t kPiecesPerCall = 16;

template <class Call>
void by_calls(float* base, const ZeroPlan& plan, const Call& call,
              const std::vector<size_t>* which = nullptr) {
  const size_t n = which ? which->size() : plan.pieces.size();
  std::vector<RankSlices> batch;
  for (size_t i = 0; i < n; ++i) {
    const size_t p = which ? (*which)[i] : i;
    batch.push_back({base + plan.pieces[p].first, &plan.counts[p], &plan.displs[p]});
    if (batch.size() == kPiecesPerCall || i + 1 == n) {
      call(batch);
      batch.clear();
    }
  }
}

}  // namespace

void reduce_scatter_sum(float* grads, const ZeroPlan& plan, ShardCollectives& comm) {
  by_calls(grads, plan, [&](const std::vector<RankSlices>& b) { comm.reduce_scatter(b); });
}

void allgather_weights(model::Transformer& model, const ZeroPlan& plan, ShardCollectives& comm) {
  by_calls(model.params(), plan, [&](const std::vector<RankSlices>& b) { comm.allgather(b); });
  model.backend().external_write(model.params(), model.num_params());
}

Zero1Overlap::Zero1Overlap(const ZeroPlan& plan, const model::ParameterLayout& layout,
                           ShardCollectives& comm)
    : plan_(&plan), comm_(&comm), buckets_(piece_buckets(plan, layout)) {}

void Zero1Overlap::arm(model::Transformer& model) {
  LEAP_CHECK(!in_flight_ && started_ == 0, "Zero1Overlap armed twice before its reduce-scatter");
  float* grads = model.grads();
  const int layers = static_cast<int>(buckets_.layers.size());
  model.set_layer_grads_done([this, grads, layers](int l) {
    // Layers finish from the last down: anything else would break the order every rank keeps.
    LEAP_CHECK(l == layers - 1 - started_, "layer " << l << " finished out of order");
    start_layer(grads, l);
  });
}

void Zero1Overlap::start_layer(float* grads, int l) {
  if (in_flight_) comm_->reduce_scatter_finish();
  std::vector<RankSlices> slices;
  for (size_t p : buckets_.layers[static_cast<size_t>(l)])
    slices.push_back({grads + plan_->pieces[p].first, &plan_->counts[p], &plan_->displs[p]});
  comm_->reduce_scatter_start(slices);
  in_flight_ = true;
  ++started_;
}

void Zero1Overlap::reduce_scatter(model::Transformer& model) {
  model.set_layer_grads_done(nullptr);
  overlapped_ = started_;  // what the backward started
  float* grads = model.grads();
  const int layers = static_cast<int>(buckets_.layers.size());
  while (started_ < layers) start_layer(grads, layers - 1 - started_);
  if (in_flight_) comm_->reduce_scatter_finish();
  in_flight_ = false;
  started_ = 0;
  by_calls(grads, *plan_, [this](const std::vector<RankSlices>& b) { comm_->reduce_scatter(b); },
           &buckets_.rest);
}

model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            ShardCollectives& comm, Zero1Overlap* overlap, double grad_multiplier) {
  if (overlap)
    overlap->reduce_scatter(model);
  else
    reduce_scatter_sum(model.grads(), plan, comm);
  const model::StepStats s =
      optimizer.step([&comm](double local_sum_squares) { return comm.sum(local_sum_squares); }, nullptr, grad_multiplier);
  allgather_weights(model, plan, comm);
  return s;
}

}  // namespace leap::mpi
