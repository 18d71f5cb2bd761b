// eval_int_expr (tasks/expr.h): precedence, C semantics of / and %, cdiv/min/max, and the
// errors a hostile or mistyped launch line must produce (overflow, division by zero, unknown
// names, float params), each naming the offending token.
#include <gtest/gtest.h>

#include <limits>

#include "tasks/expr.h"

namespace leap::tasks {
namespace {

Params sizes() {
  return {{"n", int64_t{4099}}, {"m", int64_t{37}}, {"k", int64_t{3}}, {"alpha", 0.5}};
}

int64_t eval_ok(const char* text) {
  auto v = eval_int_expr(text, sizes());
  EXPECT_TRUE(v.has_value()) << text << ": " << v.status().message();
  return v.has_value() ? *v : -999;
}

std::string eval_err(const char* text) {
  auto v = eval_int_expr(text, sizes());
  EXPECT_FALSE(v.has_value()) << text << " evaluated to " << (v ? *v : 0);
  if (v) return "";
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidInput);
  return v.status().message();
}

TEST(Expr, LiteralsNamesAndPrecedence) {
  EXPECT_EQ(eval_ok("42"), 42);
  EXPECT_EQ(eval_ok("n"), 4099);
  EXPECT_EQ(eval_ok("2 + 3 * 4"), 14);
  EXPECT_EQ(eval_ok("(2 + 3) * 4"), 20);
  EXPECT_EQ(eval_ok("m*k"), 111);
  EXPECT_EQ(eval_ok("10 - 3 - 2"), 5);  // left-associative
  EXPECT_EQ(eval_ok("100 / 10 / 5"), 2);
  EXPECT_EQ(eval_ok("-3 + 5"), 2);
  EXPECT_EQ(eval_ok("--3"), 3);
  EXPECT_EQ(eval_ok("2 * -3"), -6);
  EXPECT_EQ(eval_ok("  n %  256 "), 4099 % 256);
}

TEST(Expr, DivisionTruncatesLikeC) {
  EXPECT_EQ(eval_ok("7 / 2"), 3);
  EXPECT_EQ(eval_ok("-7 / 2"), -3);
  EXPECT_EQ(eval_ok("-7 % 2"), -1);
  EXPECT_EQ(eval_ok("7 % -2"), 1);
}

TEST(Expr, Functions) {
  EXPECT_EQ(eval_ok("cdiv(n, 256)"), 17);  // 4099 / 256 = 16.01
  EXPECT_EQ(eval_ok("cdiv(4096, 256)"), 16);
  EXPECT_EQ(eval_ok("cdiv(1, 256)"), 1);
  EXPECT_EQ(eval_ok("cdiv(-7, 2)"), -3);  // ceiling of -3.5
  EXPECT_EQ(eval_ok("cdiv(7, -2)"), -3);
  EXPECT_EQ(eval_ok("cdiv(-7, -2)"), 4);
  EXPECT_EQ(eval_ok("min(n, 1024)"), 1024);
  EXPECT_EQ(eval_ok("max(m, k)"), 37);
  EXPECT_EQ(eval_ok("min(cdiv(n, 128), max(2, 3)) * 2"), 6);
  EXPECT_EQ(eval_ok("cdiv(m*k, 32)"), 4);
}

TEST(Expr, OverflowIsAnError) {
  EXPECT_NE(eval_err("9223372036854775807 + 1").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("4294967296 * 4294967296").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("-9223372036854775807 - 2").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("99999999999999999999").find("99999999999999999999"), std::string::npos);
  // INT64_MIN / -1 and -INT64_MIN do not fit.
  EXPECT_NE(eval_err("(-9223372036854775807 - 1) / -1").find("overflow"), std::string::npos);
  EXPECT_NE(eval_err("-(-9223372036854775807 - 1)").find("overflow"), std::string::npos);
  EXPECT_EQ(eval_ok("9223372036854775807"), std::numeric_limits<int64_t>::max());
}

TEST(Expr, DivisionByZero) {
  EXPECT_NE(eval_err("n / 0").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_err("n % (k - 3)").find("division by zero"), std::string::npos);
  EXPECT_NE(eval_err("cdiv(n, 0)").find("division by zero"), std::string::npos);
}

TEST(Expr, ErrorsNameTheToken) {
  EXPECT_NE(eval_err("nn * 2").find("'nn'"), std::string::npos);
  EXPECT_NE(eval_err("alpha * 2").find("'alpha'"), std::string::npos);  // float param
  EXPECT_NE(eval_err("floor(n, 2)").find("'floor'"), std::string::npos);
  EXPECT_NE(eval_err("n $ 2").find("'$'"), std::string::npos);
  EXPECT_NE(eval_err("n 2").find("'2'"), std::string::npos);
  EXPECT_NE(eval_err("1.5 * n").find("'1.5'"), std::string::npos);
  EXPECT_NE(eval_err("(n + 1").find("end of expression"), std::string::npos);
  EXPECT_NE(eval_err("cdiv(n)").find("')'"), std::string::npos);
  EXPECT_NE(eval_err("min(n, 1, 2)").find("','"), std::string::npos);
  EXPECT_NE(eval_err("").find("empty"), std::string::npos);
  EXPECT_NE(eval_err("n +").find("end of expression"), std::string::npos);
  // Every message quotes the whole expression too.
  EXPECT_NE(eval_err("n / zz").find("'n / zz'"), std::string::npos);
}

TEST(Expr, DeepNestingIsRejectedNotACrash) {
  std::string deep(10000, '(');
  deep += "1";
  deep += std::string(10000, ')');
  EXPECT_NE(eval_err(deep.c_str()).find("nested too deeply"), std::string::npos);
  std::string negs(10000, '-');
  negs += "1";
  EXPECT_NE(eval_err(negs.c_str()).find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace leap::tasks
