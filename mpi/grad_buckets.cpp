// uncovered_ranges: the part of the gradient reducer's bucket plan outside the layers.
#include "mpi/grad_buckets.h"

#include <algorithm>
#include <string>

namespace leap::mpi {

std::vector<FloatRange> uncovered_ranges(std::vector<FloatRange> taken, size_t total) {
  std::sort(taken.begin(), taken.end());
  std::vector<FloatRange> rest;
  size_t at = 0;
  for (const auto& [off, n] : taken) {
    if (off > at) rest.emplace_back(at, off - at);
    at = std::max(at, off + n);
  }
  if (at < total) rest.emplace_back(at, total - at);
  return rest;
}

}  // namespace leap::mpi
