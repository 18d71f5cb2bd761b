// Spreading work across ranks so that their token counts balance (design.md, One RL step: turn-1
// prompts and training samples; later turns go back to their previous rank instead). Greedy longest-first: items in decreasing weight, each to the least-loaded rank.
// Guarantee, tested: the most- and least-loaded ranks differ by at most the largest item, i.e.
// "balanced within one sample's tokens". Ties break by index, so every rank computes the same
// assignment from the same weights. Within a rank, sequences are ordered by length before they
// are cut into micro-batches (sort_by_length).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace leap::mpi {

// owner[i] in [0, n_ranks) for each item; n_ranks > 0.
std::vector<int> balance_by_weight(const std::vector<int64_t>& weights, int n_ranks);

// A rank's sequences in increasing length (stable: ties keep their order), to be cut into
// micro-batches: a micro-batch is padded to its longest sequence (B x T_max rows through every
// GEMM, and T_max^2 attention), so neighbours of similar length waste the least. The gradient
// is the same sum in another order.
template <typename Seq>
void sort_by_length(std::vector<const Seq*>& seqs) {
  std::stable_sort(seqs.begin(), seqs.end(),
                   [](const Seq* a, const Seq* b) { return a->tokens.size() < b->tokens.size(); });
}

// Total weight per rank under an assignment.
std::vector<int64_t> rank_loads(const std::vector<int64_t>& weights, const std::vector<int>& owner, int n_ranks);

}  // namespace leap::mpi
