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
  int layers = 0;
  while (!layer_ranges(layout, layers).empty()) ++layers;
  for (int l = layers - 1; l >= 0; --l)
    for (const auto& r : layer_ranges(layout, l)) buckets.push_back(r);
  for (const auto& r : uncovered_ranges(buckets, layout.total())) buckets.push_back(r);
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

// The plan's pieces of the flat buffer at `base`, at most kPiecesPerCall to a call: on NCCL one
// group and one wait each (a layer has about a dozen pieces).
constexpr size_t kPiecesPerCall = 16;

template <class Call>
void by_calls(float* base, const ZeroPlan& plan, const Call& call) {
  std::vector<RankSlices> batch;
  for (size_t p = 0; p < plan.pieces.size(); ++p) {
    batch.push_back({base + plan.pieces[p].first, &plan.counts[p], &plan.displs[p]});
    if (batch.size() == kPiecesPerCall || p + 1 == plan.pieces.size()) {
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

model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            ShardCollectives& comm) {
  reduce_scatter_sum(model.grads(), plan, comm);
  const model::StepStats s = optimizer.step([&comm](double local_sum_squares) { return comm.sum(local_sum_squares); });
  allgather_weights(model, plan, comm);
  return s;
}

}  // namespace leap::mpi
