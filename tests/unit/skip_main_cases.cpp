// Cases for tests/unit/test_skip_main.sh, which runs this program with filters and checks the
// exit code of tests/gtest_skip_main.cpp: 77 when all skipped, 1 on any failure, 0 otherwise.
#include <gtest/gtest.h>

#include <cstdlib>

namespace {

TEST(Skipped, One) { GTEST_SKIP() << "skipped on purpose"; }
TEST(Skipped, Two) { GTEST_SKIP() << "skipped on purpose"; }
TEST(Passes, One) { EXPECT_EQ(1 + 1, 2); }
// Fails only when asked to, so that the program's own ctest entry never runs it by accident.
TEST(FailsOnRequest, One) { EXPECT_EQ(std::getenv("LEAP_SKIP_MAIN_FAIL"), nullptr); }

}  // namespace
