// Spreading work across ranks so that their token counts balance (DESIGN.md, One RL step:
// next-turn prompts and training samples are "spread across ranks so that their token counts
// balance"). Greedy longest-first: items in decreasing weight, each to the least-loaded rank.
// Guarantee, tested: the most- and least-loaded ranks differ by at most the largest item, i.e.
// "balanced within one sample's tokens". Ties break by index, so every rank computes the same
// assignment from the same weights.
#pragma once

#include <cstdint>
#include <vector>

namespace leap::mpi {

// owner[i] in [0, n_ranks) for each item; n_ranks > 0.
std::vector<int> balance_by_weight(const std::vector<int64_t>& weights, int n_ranks);

// Total weight per rank under an assignment.
std::vector<int64_t> rank_loads(const std::vector<int64_t>& weights, const std::vector<int>& owner, int n_ranks);

}  // namespace leap::mpi
