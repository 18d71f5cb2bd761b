// ZeRO stage 1: the shard plan and its collectives (see zero_shard.h).
#include "mpi/zero_shard.h"

#include <algorithm>

#include "common/check.h"
#include "mpi/grad_reduce.h"

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

void reduce_scatter_sum(float* grads, const ZeroPlan& plan, MPI_Comm comm) {
  std::vector<float> mine;
  for (size_t p = 0; p < plan.pieces.size(); ++p) {
    const auto& counts = plan.counts[p];
    const size_t r = static_cast<size_t>(plan.rank);
    mine.resize(static_cast<size_t>(std::max(1, counts[r])));
    float* piece = grads + plan.pieces[p].first;
    MPI_Reduce_scatter(piece, mine.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
    std::copy_n(mine.data(), counts[r], piece + plan.displs[p][r]);
  }
}

void allgather(float* params, const ZeroPlan& plan, MPI_Comm comm) {
  for (size_t p = 0; p < plan.pieces.size(); ++p)
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, params + plan.pieces[p].first,
                   plan.counts[p].data(), plan.displs[p].data(), MPI_FLOAT, comm);
}

void gather_moments(const model::AdamW& optimizer, const ZeroPlan& plan, size_t total, MPI_Comm comm,
                    std::vector<float>* m_full, std::vector<float>* v_full) {
  const bool root = plan.rank == 0;
  // Where a slice starting at `flat` sits in the compact moments: its shard range's offset there.
  const auto& shard = optimizer.shard();
  auto compact_of = [&](size_t flat) {
    auto it = std::upper_bound(shard.begin(), shard.end(), std::make_pair(flat, SIZE_MAX));
    LEAP_CHECK(it != shard.begin());
    --it;
    return optimizer.state_offset(static_cast<size_t>(it - shard.begin())) + (flat - it->first);
  };
  if (root) {
    m_full->assign(total, 0.f);
    v_full->assign(total, 0.f);
  }
  const size_t r = static_cast<size_t>(plan.rank);
  for (const auto& [src, dst] : {std::pair{optimizer.m(), m_full}, std::pair{optimizer.v(), v_full}}) {
    for (size_t p = 0; p < plan.pieces.size(); ++p) {
      const int n = plan.counts[p][r];
      const float* mine = n > 0 ? src + compact_of(plan.pieces[p].first + static_cast<size_t>(plan.displs[p][r])) : src;
      MPI_Gatherv(mine, n, MPI_FLOAT, root ? dst->data() + plan.pieces[p].first : nullptr, plan.counts[p].data(),
                  plan.displs[p].data(), MPI_FLOAT, 0, comm);
    }
  }
}

model::StepStats zero1_step(model::Transformer& model, model::AdamW& optimizer, const ZeroPlan& plan,
                            MPI_Comm comm) {
  reduce_scatter_sum(model.grads(), plan, comm);
  const model::StepStats s =
      optimizer.step([comm](double local_sum_squares) { return allreduce_sum(local_sum_squares, comm); });
  allgather(model.params(), plan, comm);
  return s;
}

}  // namespace leap::mpi
