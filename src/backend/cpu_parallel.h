// When the CPU backend's loops fork threads. A parallel region costs a few microseconds on an
// idle machine and far more when the cores are shared, so small ops (decode steps, tiny
// models) run on one thread; the threshold is in units of "about one float operation".
#pragma once

#include <cstddef>

namespace leap::backend {

inline bool worth_threads(size_t work) { return work >= (size_t{1} << 16); }

}  // namespace leap::backend
