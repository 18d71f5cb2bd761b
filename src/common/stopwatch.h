// Wall-clock seconds since a steady_clock time point: the one way timings are taken.
#pragma once

#include <chrono>

namespace leap {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace leap
