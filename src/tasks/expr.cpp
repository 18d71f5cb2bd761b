// Integer expression evaluator (expr.h): a recursive-descent parser over the text that evaluates
// as it parses. Invariants: every arithmetic step is checked for int64 overflow, / and % by zero
// are errors, nesting is bounded (a hostile "((((..." cannot exhaust the stack), and every error
// names the offending token and the whole expression.
#include "tasks/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace leap::tasks {
namespace {

constexpr int kMaxDepth = 64;

class ExprParser {
 public:
  ExprParser(std::string_view text, const Params& params) : text_(text), params_(params) {}

  Expected<int64_t> parse() {
    skip_space();
    if (pos_ == text_.size()) return fail_msg("empty expression");
    auto v = parse_sum();
    if (!v) return v;
    skip_space();
    if (pos_ != text_.size()) return fail_at("unexpected token");
    return v;
  }

 private:
  // --- errors ------------------------------------------------------------------------------------
  Status fail_msg(const std::string& what) const {
    return invalid_input(fmt::format("{} in expression '{}'", what, text_));
  }
  // "unexpected token ')' at column 7 in expression 'cdiv(n,)'".
  Status fail_at(const std::string& what) const {
    std::string tok =
        pos_ < text_.size() ? std::string(peek_token()) : std::string("end of expression");
    return invalid_input(
        fmt::format("{} '{}' at column {} in expression '{}'", what, tok, pos_ + 1, text_));
  }
  std::string_view peek_token() const {
    size_t end = pos_;
    if (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_') {
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
        ++end;
    } else {
      ++end;
    }
    return text_.substr(pos_, end - pos_);
  }
  Status overflow(const char* op, int64_t a, int64_t b) const {
    return invalid_input(
        fmt::format("integer overflow in {} {} {} in expression '{}'", a, op, b, text_));
  }

  // --- lexing helpers ----------------------------------------------------------------------------
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // --- grammar -----------------------------------------------------------------------------------
  // sum := product (('+' | '-') product)*
  Expected<int64_t> parse_sum() {
    auto lhs = parse_product();
    if (!lhs) return lhs;
    int64_t acc = *lhs;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return acc;
      char op = text_[pos_++];
      auto rhs = parse_product();
      if (!rhs) return rhs;
      int64_t r = 0;
      bool bad =
          op == '+' ? __builtin_add_overflow(acc, *rhs, &r) : __builtin_sub_overflow(acc, *rhs, &r);
      if (bad) return overflow(op == '+' ? "+" : "-", acc, *rhs);
      acc = r;
    }
  }

  // product := unary (('*' | '/' | '%') unary)*
  Expected<int64_t> parse_product() {
    auto lhs = parse_unary();
    if (!lhs) return lhs;
    int64_t acc = *lhs;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/' && text_[pos_] != '%'))
        return acc;
      char op = text_[pos_++];
      auto rhs = parse_unary();
      if (!rhs) return rhs;
      auto r = apply(op, acc, *rhs);
      if (!r) return r;
      acc = *r;
    }
  }

  Expected<int64_t> apply(char op, int64_t a, int64_t b) const {
    int64_t r = 0;
    switch (op) {
      case '*':
        if (__builtin_mul_overflow(a, b, &r)) return overflow("*", a, b);
        return r;
      case '/':
      case '%':
        if (b == 0) return fail_msg(fmt::format("division by zero in {} {} {}", a, op, b));
        // INT64_MIN / -1 is the one quotient int64 cannot hold.
        if (a == std::numeric_limits<int64_t>::min() && b == -1)
          return overflow(op == '/' ? "/" : "%", a, b);
        return op == '/' ? a / b : a % b;
      default:
        return fail_msg(fmt::format("unknown operator '{}'", op));
    }
  }

  // unary := '-' unary | primary
  Expected<int64_t> parse_unary() {
    if (accept('-')) {
      if (++depth_ > kMaxDepth) return fail_msg("expression nested too deeply");
      auto v = parse_unary();
      --depth_;
      if (!v) return v;
      if (*v == std::numeric_limits<int64_t>::min()) return overflow("-", 0, *v);
      return -*v;
    }
    return parse_primary();
  }

  // primary := INT | NAME | FUNC '(' sum ',' sum ')' | '(' sum ')'
  Expected<int64_t> parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) return fail_at("expected a number, a name or '(' but found");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      if (++depth_ > kMaxDepth) return fail_msg("expression nested too deeply");
      auto v = parse_sum();
      --depth_;
      if (!v) return v;
      if (!accept(')')) return fail_at("expected ')' but found");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_literal();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name();
    return fail_at("unexpected token");
  }

  Expected<int64_t> parse_literal() {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int64_t d = text_[pos_] - '0';
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v)) {
        pos_ = start;
        return fail_at("integer literal out of range");
      }
      ++pos_;
    }
    // "1e5", "2.5", "0x10" are not integers of this grammar.
    if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                text_[pos_] == '_' || text_[pos_] == '.')) {
      size_t end = pos_;
      while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                    text_[end] == '.' || text_[end] == '_'))
        ++end;
      return invalid_input(
          fmt::format("malformed number '{}' in expression '{}': only decimal integers are allowed",
                      text_.substr(start, end - start), text_));
    }
    return v;
  }

  Expected<int64_t> parse_name() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      if (name != "cdiv" && name != "min" && name != "max")
        return invalid_input(fmt::format(
            "unknown function '{}' in expression '{}': only cdiv, min and max exist", name, text_));
      ++pos_;
      if (++depth_ > kMaxDepth) return fail_msg("expression nested too deeply");
      auto a = parse_sum();
      if (!a) return a;
      if (!accept(','))
        return fail_at(fmt::format("{}() takes two arguments: expected ',' but found", name));
      auto b = parse_sum();
      if (!b) return b;
      if (!accept(')'))
        return fail_at(fmt::format("{}() takes two arguments: expected ')' but found", name));
      --depth_;
      if (name == "min") return std::min(*a, *b);
      if (name == "max") return std::max(*a, *b);
      return ceil_div(*a, *b);
    }
    auto it = params_.find(name);
    if (it == params_.end())
      return invalid_input(fmt::format(
          "unknown name '{}' in expression '{}': not a parameter of the task", name, text_));
    if (!std::holds_alternative<int64_t>(it->second))
      return invalid_input(
          fmt::format("parameter '{}' in expression '{}' is a float: only integer parameters may "
                      "appear in shape, launch and scratch expressions",
                      name, text_));
    return std::get<int64_t>(it->second);
  }

  // Ceiling of the exact quotient, for any signs; C's / truncates towards zero.
  Expected<int64_t> ceil_div(int64_t a, int64_t b) const {
    if (b == 0) return fail_msg(fmt::format("division by zero in cdiv({}, {})", a, b));
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return overflow("cdiv", a, b);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
    return q;
  }

  std::string_view text_;
  const Params& params_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Expected<int64_t> eval_int_expr(std::string_view text, const Params& params) {
  return ExprParser(text, params).parse();
}

}  // namespace leap::tasks
