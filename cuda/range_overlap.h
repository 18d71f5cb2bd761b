// for_each_overlap: the entries of an address-keyed map of ranges that overlap a written range
// (ComputeCopies marks those bf16 copies stale). Free of CUDA, so a CPU test checks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace leap::cuda {

// Calls f(value) for every entry of `ranges` (start address -> value with a length `n` in
// elements of T) that overlaps [p, p + n). `longest` bounds every entry's length. Every entry
// that starts less than `longest` elements before p may reach into the range, not only the
// nearest one: a whole weight matrix starts before one of its rows, which starts before p.
template <class T, class Map, class F>
void for_each_overlap(Map& ranges, const T* p, size_t n, size_t longest, F f) {
  if (ranges.empty() || n == 0) return;
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = ranges.upper_bound(p);
  while (it != ranges.begin()) {
    auto prev = std::prev(it);
    if ((at - reinterpret_cast<uintptr_t>(prev->first)) / sizeof(T) >= longest) break;
    it = prev;
  }
  for (; it != ranges.end() && it->first < p + n; ++it) {
    if (it->first + it->second.n > p) f(it->second);
  }
}

}  // namespace leap::cuda
