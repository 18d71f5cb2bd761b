// Status/Expected: codes map to exit codes, context accumulates, the macros propagate.
#include <gtest/gtest.h>

#include "common/status.h"

namespace leap {
namespace {

Expected<int> parse_positive(int v) {
  if (v <= 0) return invalid_input("value must be positive, got " + std::to_string(v));
  return v;
}

Expected<int> doubled(int v) {
  LEAP_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  LEAP_RETURN_IF_ERROR(parse_positive(a).status().with_context("a"));
  LEAP_RETURN_IF_ERROR(parse_positive(b).status().with_context("b"));
  return Status::ok();
}

TEST(Status, ExitCodes) {
  EXPECT_EQ(Status::ok().exit_code(), 0);
  EXPECT_EQ(invalid_input("x").exit_code(), 2);
  EXPECT_EQ(not_found("x").exit_code(), 2);
  EXPECT_EQ(unsupported("x").exit_code(), 2);
  EXPECT_EQ(io_error("x").exit_code(), 1);
  EXPECT_EQ(internal_error("x").exit_code(), 1);
}

TEST(Status, ContextAndPropagation) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().message(), "value must be positive, got -1");
  Status st = check_both(1, 0);
  EXPECT_EQ(st.message(), "b: value must be positive, got 0");
  EXPECT_TRUE(check_both(1, 1).is_ok());
  EXPECT_TRUE(Status::ok().with_context("ignored").message().empty());
}

}  // namespace
}  // namespace leap
