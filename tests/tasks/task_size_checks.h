// The size rules every committed suite keeps, shared by test_committed_suites.cpp (level1/level2)
// and test_family_semantics.cpp (families): interpreter sizes ragged (no integer parameter a
// multiple of 32) and small; GPU sizes realistic, but each trial's inputs are generated on the
// host, so at most 2^24 elements (64 MiB of f32) a buffer keeps a trial's set-up under a second.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <variant>

#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace leap::tasks {

inline void expect_suite_sizes(const Task& t) {
  for (const auto& [name, v] : t.cpu_params) {
    if (const auto* i = std::get_if<int64_t>(&v)) {
      EXPECT_NE(*i % 32, 0) << t.id << " cpu_params." << name;
    }
  }
  for (const auto& b : t.buffers) {
    auto e = buffer_elements(b, t.cpu_params);
    ASSERT_TRUE(e) << t.id;
    EXPECT_LE(*e, 20480) << t.id << " buffer " << b.name << " is large for the interpreter";
    auto g = buffer_elements(b, t.params);
    ASSERT_TRUE(g) << t.id;
    EXPECT_LE(*g, int64_t{1} << 24) << t.id << " buffer " << b.name << " is slow to generate";
  }
}

}  // namespace leap::tasks
