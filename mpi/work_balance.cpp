// Longest-processing-time-first assignment.
#include "mpi/work_balance.h"

#include <algorithm>
#include <numeric>

namespace leap::mpi {

std::vector<int> balance_by_weight(const std::vector<int64_t>& weights, int n_ranks) {
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  std::vector<int64_t> load(static_cast<size_t>(n_ranks), 0);
  std::vector<int> owner(weights.size(), 0);
  for (size_t i : order) {
    auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owner[i] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += weights[i];
  }
  return owner;
}

std::vector<int64_t> rank_loads(const std::vector<int64_t>& weights, const std::vector<int>& owner, int n_ranks) {
  std::vector<int64_t> load(static_cast<size_t>(n_ranks), 0);
  for (size_t i = 0; i < weights.size(); ++i) load[static_cast<size_t>(owner[i])] += weights[i];
  return load;
}

}  // namespace leap::mpi
