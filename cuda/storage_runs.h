// Where a range of backend memory lies in a model's bf16 matrices (Bf16Weights) and where in
// ordinary fp32 memory, and how a copy between two such ranges splits into runs of one storage
// on each side. Free of CUDA, so a CPU test checks it (tests/cuda/test_host_rules.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace leap::cuda {

// The buffer of `buffers` (start address -> an entry with a `bf16_floats` member: its leading
// floats that are bf16) whose bf16 part holds p, and how many floats of [p, p + n) lie in that
// part: always a prefix of the range. {buffers.end(), 0} when p is in none.
template <class Map>
std::pair<typename Map::const_iterator, size_t> bf16_prefix(const Map& buffers, const float* p,
                                                            size_t n) {
  auto it = buffers.upper_bound(p);
  if (it == buffers.begin()) return {buffers.end(), 0};
  --it;
  if (p >= it->first + it->second.bf16_floats) return {buffers.end(), 0};
  return {it, std::min(n, it->second.bf16_floats - static_cast<size_t>(p - it->first))};
}

// Calls f(offset, count, dst_bf16, src_bf16) for consecutive runs covering [0, n) over which
// neither dst + offset nor src + offset changes storage. prefix(p, n) is the count of floats of
// [p, p + n) in bf16 storage, always a prefix of the range (bf16_prefix's second).
template <class Prefix, class F>
void for_each_storage_run(const float* dst, const float* src, size_t n, const Prefix& prefix, F f) {
  size_t at = 0;
  while (at < n) {
    const size_t left = n - at;
    const size_t d = prefix(dst + at, left), s = prefix(src + at, left);
    const size_t len = std::min(d > 0 ? d : left, s > 0 ? s : left);
    f(at, len, d > 0, s > 0);
    at += len;
  }
}

}  // namespace leap::cuda
