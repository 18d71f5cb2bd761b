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

void gather_moment(const model::AdamW& optimizer, const ZeroPlan& plan, const io::MomentTensor& mt, MPI_Comm comm,
                   float* out) {
  const float* src = mt.second ? optimizer.v() : optimizer.m();
  backend::Backend& be = optimizer.backend();
  std::vector<float> staged;  // a device backend's slice, downloaded
  const size_t t0 = mt.tensor->offset, t1 = t0 + mt.tensor->numel;
  if (t1 == t0) return;  // nothing to gather (and the checkpoint writer skips such a tensor)
  // Where a slice starting at `flat` sits in the compact moments: its shard range's offset there.
  const auto& shard = optimizer.shard();
  auto compact_of = [&](size_t flat) {
    auto it = std::upper_bound(shard.begin(), shard.end(), std::make_pair(flat, SIZE_MAX));
    LEAP_CHECK(it != shard.begin());
    --it;
    return optimizer.state_offset(static_cast<size_t>(it - shard.begin())) + (flat - it->first);
  };
  const size_t world = static_cast<size_t>(plan.world), me = static_cast<size_t>(plan.rank);
  std::vector<int> counts(world), displs(world);
  for (size_t p = 0; p < plan.pieces.size(); ++p) {
    const size_t p0 = plan.pieces[p].first;
    if (p0 >= t1 || p0 + plan.pieces[p].second <= t0) continue;  // the piece misses the tensor
    // Every rank's slice of the piece, cut to the tensor: its floats and where they go, counted
    // from where the piece starts in `out` (a piece is at most max_piece floats: no int overflows).
    const size_t base = std::max(t0, p0);
    size_t my_lo = 0;
    for (size_t r = 0; r < world; ++r) {
      const size_t lo = std::max(t0, p0 + static_cast<size_t>(plan.displs[p][r]));
      const size_t hi = std::min(t1, p0 + static_cast<size_t>(plan.displs[p][r]) + static_cast<size_t>(plan.counts[p][r]));
      counts[r] = hi > lo ? static_cast<int>(hi - lo) : 0;
      displs[r] = hi > lo ? static_cast<int>(lo - base) : 0;
      if (r == me) my_lo = lo;
    }
    const float* mine = counts[me] > 0 ? src + compact_of(my_lo) : src;
    if (!be.host_memory() && counts[me] > 0) {
      staged.resize(static_cast<size_t>(counts[me]));
      be.download(staged.data(), mine, staged.size());
      mine = staged.data();
    }
    MPI_Gatherv(mine, counts[me], MPI_FLOAT, plan.rank == 0 ? out + (base - t0) : nullptr, counts.data(),
                displs.data(), MPI_FLOAT, 0, comm);
  }
}

void serve_moment_gather(const model::AdamW& optimizer, const ZeroPlan& plan, const model::ParameterLayout& layout,
                         MPI_Comm comm) {
  for (const auto& mt : io::moment_order(layout)) gather_moment(optimizer, plan, mt, comm, nullptr);
}

model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            ShardCollectives& comm) {
  reduce_scatter_sum(model.grads(), plan, comm);
  const model::StepStats s = optimizer.step([&comm](double local_sum_squares) { return comm.sum(local_sum_squares); });
  allgather_weights(model, plan, comm);
  return s;
}

}  // namespace leap::mpi
