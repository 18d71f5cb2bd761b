// Test helper: the golden files written by tests/model/make_golden.py (safetensors with fp32
// tensors) and the comparison rule every golden test uses: normalised error
// max|got - want| / max|want| <= tolerance, with the largest difference printed.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace leap::model::testing {

inline std::string golden_dir() {
  const char* env = std::getenv("LEAP_GOLDEN_DIR");
  return env ? env : std::string(LEAP_BINARY_DIR) + "/tests/model/golden";
}

inline std::vector<float> read_all(const SafetensorsFile& f, const std::string& name) {
  auto it = f.entries().find(name);
  EXPECT_TRUE(it != f.entries().end()) << "golden tensor " << name << " missing";
  if (it == f.entries().end()) return {};
  size_t n = 1;
  for (auto d : it->second.shape) n *= static_cast<size_t>(d);
  std::vector<float> out(n);
  EXPECT_TRUE(f.read_f32(name, it->second.shape, out.data()).is_ok());
  return out;
}

// Returns the normalised error and reports it; fails the test above `tol`.
inline double expect_close(const std::string& what, const float* got, const float* want, size_t n,
                           double tol = 1e-4) {
  double max_diff = 0, max_ref = 0;
  size_t worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= max_diff)) {  // also catches NaN
      max_diff = std::isnan(d) ? INFINITY : d;
      worst = i;
    }
    max_ref = std::fmax(max_ref, std::fabs(want[i]));
  }
  double rel = max_diff / std::fmax(max_ref, 1e-30);
  std::printf("  %-58s max|diff| %.3e  max|ref| %.3e  rel %.3e\n", what.c_str(), max_diff, max_ref,
              rel);
  EXPECT_LE(rel, tol) << what << ": worst at index " << worst << " got " << got[worst] << " want "
                      << want[worst];
  return rel;
}

}  // namespace leap::model::testing
