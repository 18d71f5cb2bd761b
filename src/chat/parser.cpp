// Recursive-descent parser for the Jinja subset, with jinja2's operator precedence (lowest
// first): `x if c else y`, or, and, not, comparisons and `in`, + -, ~, * / // %, unary minus,
// then postfix (.attr, [index], [a:b:c], call) with filters and `is` tests.
#include "chat/parser.h"

#include <charconv>
#include <set>

#include "chat/builtins.h"
#include "chat/lexer.h"

namespace leap::chat {
namespace {

// Statements jinja2 has that this subset does not: named so the error says what was found.
const std::set<std::string>& unsupported_statements() {
  static const std::set<std::string> names = {
      "call", "include",    "import", "from",       "extends", "block",     "filter", "with",
      "raw",  "autoescape", "do",     "generation", "trans",   "pluralize", "print"};
  return names;
}

// What the evaluator's `loop` object holds; loop.cycle(), loop.depth and the like are refused.
const std::set<std::string>& loop_attributes() {
  static const std::set<std::string> names = {"index", "index0", "revindex", "revindex0", "first",
                                              "last",  "length", "previtem", "nextitem"};
  return names;
}

// Bounds the parser's recursion, so a hostile template is an error, not a stack overflow.
class DepthGuard {
 public:
  static constexpr int kMaxNesting = 250;
  DepthGuard(int& depth, int line) : depth_(depth) {
    if (++depth_ > kMaxNesting) fail_unsupported(line, "nesting deeper than 250 levels");
  }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse() {
    std::string stop;
    Body body = parse_body({}, &stop);
    // A macro may be called above its definition (inside another macro's body, say), so calls
    // of names that are neither built in nor a macro are refused once the whole template is read.
    for (const auto& [name, line] : called_names_) {
      if (!macro_names_.count(name)) fail_unsupported(line, "function '" + name + "()'");
    }
    return body;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(i_ + ahead, toks_.size() - 1)];
  }
  const Token& next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }
  bool at_op(const char* op) const { return peek().kind == TokenKind::kOp && peek().text == op; }
  bool at_name(const char* n) const { return peek().kind == TokenKind::kName && peek().text == n; }
  void expect_op(const char* op) {
    if (!at_op(op))
      fail_syntax(peek().line, std::string("expected '") + op + "', found " + describe(peek()));
    next();
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd)
      fail_syntax(peek().line, "expected '%}', found " + describe(peek()));
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kVarEnd:
        return "'}}'";
      case TokenKind::kEnd:
        return "the end of the template";
      case TokenKind::kString:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName)
      fail_syntax(peek().line, "expected a name, found " + describe(peek()));
    return next().text;
  }

  // Parses statements until one of the `stops` keywords opens a block tag; leaves the tokens at
  // that keyword (after `{%`) and reports it in *stop. At the top level, stops is empty.
  Body parse_body(const std::set<std::string>& stops, std::string* stop) {
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEnd) {
        if (!stops.empty())
          fail_syntax(t.line, "the template ends inside a block (missing end tag)");
        return body;
      }
      if (t.kind == TokenKind::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = t.line;
        s->text = next().text;
        body.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokenKind::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        s->expr = parse_expr();
        if (peek().kind != TokenKind::kVarEnd)
          fail_syntax(peek().line, "expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(s));
        continue;
      }
      if (t.kind != TokenKind::kBlockBegin) fail_syntax(t.line, "unexpected " + describe(t));
      next();
      const Token& kw = peek();
      if (kw.kind != TokenKind::kName) fail_syntax(kw.line, "expected a statement name after '{%'");
      if (stops.count(kw.text)) {
        *stop = kw.text;
        next();
        return body;
      }
      body.push_back(parse_statement());
    }
  }

  StmtPtr parse_statement() {
    DepthGuard guard(depth_, peek().line);
    const Token kw = next();
    auto s = std::make_unique<Stmt>();
    s->line = kw.line;
    if (kw.text == "if") {
      s->kind = Stmt::Kind::kIf;
      ExprPtr cond = parse_expr();
      expect_block_end();
      std::string stop;
      while (true) {
        Body body = parse_body({"elif", "else", "endif"}, &stop);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (stop == "elif") {
          cond = parse_expr();
          expect_block_end();
          continue;
        }
        if (stop == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, &stop);
        }
        expect_block_end();
        return s;
      }
    }
    if (kw.text == "macro") return parse_macro(std::move(s));
    if (kw.text == "for") {
      s->kind = Stmt::Kind::kFor;
      s->targets.push_back(expect_name());
      while (at_op(",")) {
        next();
        s->targets.push_back(expect_name());
      }
      if (!at_name("in")) fail_syntax(peek().line, "expected 'in' in the for statement");
      next();
      s->expr = parse_expr(/*allow_condition=*/false);
      if (at_name("if")) {
        next();
        s->filter = parse_expr();
      }
      if (at_name("recursive")) fail_unsupported(peek().line, "'for ... recursive'");
      expect_block_end();
      std::string stop;
      ++for_depth_;
      ++loop_depth_;
      s->body = parse_body({"else", "endfor"}, &stop);
      --loop_depth_;
      if (stop == "else") {  // outside the loop, but still no place for a macro
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &stop);
      }
      --for_depth_;
      expect_block_end();
      return s;
    }
    if (kw.text == "set") {
      s->kind = Stmt::Kind::kSet;
      s->targets.push_back(expect_name());
      if (at_op(".")) {
        next();
        s->attr = expect_name();
      }
      if (at_op(",")) fail_unsupported(peek().line, "'set a, b = ...' (tuple assignment)");
      if (peek().kind == TokenKind::kBlockEnd)
        fail_unsupported(kw.line, "'{% set %}...{% endset %}' (block assignment)");
      expect_op("=");
      s->expr = parse_expr();
      expect_block_end();
      return s;
    }
    if (kw.text == "break" || kw.text == "continue") {
      // jinja2 refuses these when compiling, wherever they sit (a macro body never called too).
      if (loop_depth_ == 0) fail_syntax(kw.line, "'" + kw.text + "' outside a for loop");
      s->kind = kw.text == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
      return s;
    }
    if (unsupported_statements().count(kw.text))
      fail_unsupported(kw.line, "'{% " + kw.text + " %}'");
    if (kw.text == "elif" || kw.text == "else" || kw.text.rfind("end", 0) == 0) {
      fail_syntax(kw.line, "'{% " + kw.text + " %}' without an open block it could close");
    }
    fail_unsupported(kw.line, "'{% " + kw.text + " %}' (unknown statement)");
  }

  // {% macro name(a, b=default) %}body{% endmacro %}. The body sees its arguments and the
  // template's top-level variables as they are when it is called, as in jinja2; so a macro is
  // defined only where no loop variable or other macro's argument could be in its closure.
  StmtPtr parse_macro(StmtPtr s) {
    s->kind = Stmt::Kind::kMacro;
    if (for_depth_ > 0 || macro_depth_ > 0)
      fail_unsupported(s->line, "'{% macro %}' inside a for loop or another macro");
    s->targets.push_back(expect_name());
    expect_op("(");
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;  // a loop around the definition (refused below anyway) is not the body's
    while (!at_op(")")) {
      std::string param = expect_name();
      if (param == "true" || param == "false" || param == "none" || param == "True" ||
          param == "False" || param == "None")
        fail_syntax(s->line, "'" + param + "' cannot be a parameter name");
      for (const auto& [other, unused] : s->params)
        if (other == param) fail_syntax(s->line, "duplicate parameter '" + param + "'");
      ExprPtr dflt;
      if (at_op("=")) {
        next();
        dflt = parse_expr();
      } else if (!s->params.empty() && s->params.back().second) {
        fail_syntax(s->line, "non-default argument follows default argument");
      }
      s->params.emplace_back(std::move(param), std::move(dflt));
      if (!at_op(",")) break;
      next();
      if (at_op(")")) fail_syntax(s->line, "expected a parameter name after ',', found ')'");
    }
    expect_op(")");
    expect_block_end();
    std::string stop;
    ++macro_depth_;
    s->body = parse_body({"endmacro"}, &stop);
    --macro_depth_;
    loop_depth_ = outer_loops;
    expect_block_end();
    macro_names_.insert(s->targets[0]);
    return s;
  }

  static std::int64_t parse_int(const Token& t) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || end != t.text.data() + t.text.size()) {
      fail_unsupported(t.line, "integer literal " + t.text + " (beyond 64 bits)");
    }
    return v;
  }
  static double parse_float(const Token& t) {
    double v = 0;
    auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || end != t.text.data() + t.text.size()) {
      fail_unsupported(t.line, "float literal " + t.text + " (out of range)");
    }
    return v;
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr lhs, ExprPtr rhs, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(lhs));
    e->children.push_back(std::move(rhs));
    return e;
  }

  ExprPtr parse_expr(bool allow_condition = true) {
    DepthGuard guard(depth_, peek().line);
    ExprPtr e = parse_or();
    if (allow_condition && at_name("if")) {
      int line = next().line;
      auto c = make(Expr::Kind::kCondition, line);
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (at_name("else")) {
        next();
        other = parse_expr();
      }
      c->children.push_back(std::move(cond));
      c->children.push_back(std::move(e));
      c->children.push_back(std::move(other));
      return c;
    }
    return e;
  }
  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    DepthGuard guard(depth_, peek().line);
    if (at_name("not")) {
      int line = next().line;
      auto e = make(Expr::Kind::kNot, line);
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      int line = peek().line;
      if (peek().kind == TokenKind::kOp &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        std::string op = next().text;
        e = binary(op, std::move(e), parse_math1(), line);
      } else if (at_name("in")) {
        next();
        e = binary("in", std::move(e), parse_math1(), line);
      } else if (at_name("not") && peek(1).kind == TokenKind::kName && peek(1).text == "in") {
        next();
        next();
        e = binary("not in", std::move(e), parse_math1(), line);
      } else {
        return e;
      }
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = next();
      e = binary(op.text, std::move(e), parse_concat(), op.line);
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = next();
      e = binary(op.text, std::move(e), parse_pow(), op.line);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (at_op("**")) {
      int line = next().line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(depth_, peek().line);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& op = next();
      ExprPtr operand = parse_unary(false);
      if (op.text == "-") {
        e = make(Expr::Kind::kNegate, op.line);
        e->children.push_back(std::move(operand));
      } else {
        e = std::move(operand);
      }
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filters_and_tests(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    if (t.kind == TokenKind::kString) {
      std::string s;
      int line = t.line;
      while (peek().kind == TokenKind::kString) s += next().text;  // adjacent literals join
      auto e = make(Expr::Kind::kLiteral, line);
      e->value = Value::template_string(std::move(s));
      return e;
    }
    if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) {
      auto e = make(Expr::Kind::kLiteral, t.line);
      e->value = t.kind == TokenKind::kInt ? Value::integer(parse_int(t))
                                           : Value::floating(parse_float(t));
      next();
      return e;
    }
    if (t.kind == TokenKind::kName) {
      auto e = make(Expr::Kind::kLiteral, t.line);
      const std::string& n = t.text;
      if (n == "true" || n == "True")
        e->value = Value::boolean(true);
      else if (n == "false" || n == "False")
        e->value = Value::boolean(false);
      else if (n == "none" || n == "None")
        e->value = Value::none();
      else {
        // jinja2 gives a macro's body these three implicitly; this subset does not.
        if (macro_depth_ > 0 && (n == "varargs" || n == "kwargs" || n == "caller"))
          fail_unsupported(t.line, "'" + n + "' in a macro");
        e->kind = Expr::Kind::kName;
        e->name = n;
      }
      next();
      return e;
    }
    if (at_op("(")) {
      int line = next().line;
      if (at_op(")")) {
        next();
        auto e = make(Expr::Kind::kList, line);
        e->name = "tuple";
        return e;
      }
      ExprPtr first = parse_expr();
      if (at_op(",")) {  // a tuple: a list that prints, compares and adds as Python's tuple
        auto e = make(Expr::Kind::kList, line);
        e->name = "tuple";
        e->children.push_back(std::move(first));
        while (at_op(",")) {
          next();
          if (at_op(")")) break;
          e->children.push_back(parse_expr());
        }
        expect_op(")");
        return e;
      }
      expect_op(")");
      return first;
    }
    if (at_op("[")) {
      int line = next().line;
      auto e = make(Expr::Kind::kList, line);
      while (!at_op("]")) {
        e->children.push_back(parse_expr());
        if (!at_op(",")) break;
        next();
      }
      expect_op("]");
      return e;
    }
    if (at_op("{")) {
      int line = next().line;
      auto e = make(Expr::Kind::kDict, line);
      while (!at_op("}")) {
        e->children.push_back(parse_expr());
        expect_op(":");
        e->children.push_back(parse_expr());
        if (!at_op(",")) break;
        next();
      }
      expect_op("}");
      return e;
    }
    fail_syntax(t.line, "unexpected " + describe(t) + " in an expression");
  }

  void parse_call_args(Expr* call) {
    expect_op("(");
    while (!at_op(")")) {
      if (peek().kind == TokenKind::kName && peek(1).kind == TokenKind::kOp &&
          peek(1).text == "=") {
        std::string key = next().text;
        for (const auto& [other, unused] : call->kwargs)
          if (other == key) fail_syntax(peek().line, "keyword argument '" + key + "' repeated");
        next();
        call->kwargs.emplace_back(key, parse_expr());
      } else {
        if (!call->kwargs.empty())
          fail_syntax(peek().line, "positional argument after a keyword argument");
        call->args.push_back(parse_expr());
      }
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (at_op(".")) {
        int line = next().line;
        auto a = make(Expr::Kind::kAttr, line);
        if (peek().kind == TokenKind::kInt) {  // jinja allows x.0 for x[0]
          a->kind = Expr::Kind::kIndex;
          a->children.push_back(std::move(e));
          auto idx = make(Expr::Kind::kLiteral, line);
          idx->value = Value::integer(parse_int(next()));
          a->children.push_back(std::move(idx));
          e = std::move(a);
          continue;
        }
        a->name = expect_name();
        if (e->kind == Expr::Kind::kName && e->name == "loop" &&
            !loop_attributes().count(a->name)) {
          fail_unsupported(line, "'loop." + a->name + "'");
        }
        a->children.push_back(std::move(e));
        e = std::move(a);
      } else if (at_op("[")) {
        int line = next().line;
        ExprPtr parts[3];
        int colons = 0;
        if (!at_op(":")) parts[0] = parse_expr();
        while (at_op(":") && colons < 2) {
          next();
          ++colons;
          if (!at_op(":") && !at_op("]")) parts[colons] = parse_expr();
        }
        expect_op("]");
        auto s = make(colons ? Expr::Kind::kSlice : Expr::Kind::kIndex, line);
        s->children.push_back(std::move(e));
        if (colons) {
          for (auto& p : parts) s->children.push_back(std::move(p));
        } else {
          if (!parts[0]) fail_syntax(line, "empty subscript");
          s->children.push_back(std::move(parts[0]));
        }
        e = std::move(s);
      } else if (at_op("(")) {
        int line = peek().line;
        auto c = make(Expr::Kind::kCall, line);
        check_callee(*e, line);
        c->children.push_back(std::move(e));
        parse_call_args(c.get());
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  // Only the global functions, the template's macros and the methods the subset implements may
  // be called.
  void check_callee(const Expr& callee, int line) {
    if (callee.kind == Expr::Kind::kName) {
      if (!is_known_function(callee.name)) called_names_.emplace_back(callee.name, line);
    } else if (callee.kind == Expr::Kind::kAttr) {
      if (!is_known_method(callee.name)) fail_unsupported(line, "method '." + callee.name + "()'");
    } else {
      fail_unsupported(line, "call of a computed value");
    }
  }

  ExprPtr parse_filters_and_tests(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        int line = next().line;
        auto f = make(Expr::Kind::kFilter, line);
        f->name = expect_name();
        if (!is_known_filter(f->name)) fail_unsupported(line, "filter '" + f->name + "'");
        f->children.push_back(std::move(e));
        if (at_op("(")) parse_call_args(f.get());
        e = parse_postfix(std::move(f));
      } else if (at_name("is")) {
        int line = next().line;
        auto t = make(Expr::Kind::kTest, line);
        if (at_name("not")) {
          next();
          t->negated = true;
        }
        t->name = expect_name();
        if (!is_known_test(t->name)) fail_unsupported(line, "test 'is " + t->name + "'");
        t->children.push_back(std::move(e));
        if (at_op("(")) {
          parse_call_args(t.get());
        } else if (peek().kind == TokenKind::kString || peek().kind == TokenKind::kInt ||
                   peek().kind == TokenKind::kFloat ||
                   (peek().kind == TokenKind::kName && !at_name("and") && !at_name("or") &&
                    !at_name("if") && !at_name("else") && !at_name("is") && !at_name("in") &&
                    !at_name("not"))) {
          t->args.push_back(parse_primary());  // `is equalto 'x'`, `is sameas false`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
  int for_depth_ = 0;    // for loops around the statement being read (their else branches too)
  int loop_depth_ = 0;   // for-loop bodies around it, within the innermost macro
  int macro_depth_ = 0;  // macro bodies around it
  std::set<std::string> macro_names_;
  std::vector<std::pair<std::string, int>> called_names_;  // names called, not built in; and line
};

}  // namespace

Body parse_template(std::string_view source) {
  return Parser(lex_template(source)).parse();
}

}  // namespace leap::chat
