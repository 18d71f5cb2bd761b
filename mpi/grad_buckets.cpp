// layer_ranges and uncovered_ranges: the gradient reducer's bucket plan.
#include "mpi/grad_buckets.h"

#include <algorithm>
#include <string>

namespace leap::mpi {

std::vector<FloatRange> layer_ranges(const model::ParameterLayout& layout, int l) {
  const std::string prefix = "model.layers." + std::to_string(l) + ".";
  std::vector<FloatRange> out;
  for (const auto& t : layout.tensors()) {
    if (t.name.compare(0, prefix.size(), prefix) == 0) out.emplace_back(t.offset, t.numel);
  }
  std::sort(out.begin(), out.end());
  // Adjacent tensors (gate_proj then up_proj) become one range: fewer NCCL calls.
  std::vector<FloatRange> merged;
  for (const auto& r : out) {
    if (!merged.empty() && merged.back().first + merged.back().second == r.first) {
      merged.back().second += r.second;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

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
