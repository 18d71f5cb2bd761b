// The bucket plan of the overlapped gradient sum, as ranges (offset, count) of the flat gradient:
// what belongs to each transformer layer (ParameterLayout::layer_ranges: complete as soon as the
// backward has passed that layer), and what is left once every layer's ranges are taken
// (embedding, final norm, untied LM head). Pure functions of the parameter layout, so every rank derives the same NCCL calls
// and the plan is testable without a GPU.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "model/parameters.h"

namespace leap::mpi {

using FloatRange = std::pair<size_t, size_t>;  // (offset, count) in floats

// The parts of [0, total) that no range of `taken` covers, in order.
std::vector<FloatRange> uncovered_ranges(std::vector<FloatRange> taken, size_t total);

}  // namespace leap::mpi
