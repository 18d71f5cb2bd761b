// PTX tokenizer and parser (see parser.h). A hand-written recursive-descent parser over the
// subset of PTX that NVRTC emits: module directives, variable declarations with initializers,
// .entry/.func with parameter lists and performance directives, bodies with nested scopes
// (inline asm and call sequences), labels and instructions.
#include "sandbox/ptx/parser.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace leap::sandbox::ptx {

namespace {

// Far above what NVRTC declares (a few thousand), far below what would exhaust the host.
constexpr uint64_t kMaxRegisters = 1u << 16;
// The largest .align accepted (NVRTC writes up to 16; CUDA's __align__ goes to a few hundred).
constexpr uint64_t kMaxAlign = 4096;

struct Token {
  enum class Kind { kIdent, kNumber, kString, kPunct, kEnd };
  Kind kind = Kind::kEnd;
  std::string_view text;
  int line = 0;
  size_t pos = 0;
};

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

Expected<std::vector<Token>> tokenize(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) end = s.size();
      for (size_t k = i; k < end; ++k) line += s[k] == '\n';
      i = end + 2;
    } else if (c == '"') {
      size_t start = i++;
      while (i < s.size() && s[i] != '"') ++i;
      ++i;
      out.push_back({Token::Kind::kString, s.substr(start, i - start), line, start});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
      out.push_back({Token::Kind::kNumber, s.substr(start, i - start), line, start});
    } else if (is_ident_start(c)) {
      size_t start = i;
      while (i < s.size()) {
        if (is_ident_char(s[i])) {
          ++i;
        } else if (s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') {
          i += 2;  // cache hints such as L1::no_allocate belong to the opcode
        } else {
          break;
        }
      }
      out.push_back({Token::Kind::kIdent, s.substr(start, i - start), line, start});
    } else {
      out.push_back({Token::Kind::kPunct, s.substr(i, 1), line, i});
      ++i;
    }
  }
  out.push_back({Token::Kind::kEnd, {}, line, s.size()});
  return out;
}

// Parses a PTX integer literal: decimal, 0x hex, 0b binary, leading-0 octal, optional U suffix.
bool parse_int_literal(std::string_view t, uint64_t* out) {
  if (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.remove_suffix(1);
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
    base = 2;
    t.remove_prefix(2);
  } else if (t.size() > 1 && t[0] == '0') {
    base = 8;
    t.remove_prefix(1);
  }
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out, base);
  return ec == std::errc() && p == t.data() + t.size();
}

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks) : src_(src), t_(std::move(toks)) {}

  Expected<ParsedModule> run() {
    ParsedModule m;
    while (peek().kind != Token::Kind::kEnd) {
      Status s = module_item(m);
      if (!s) return s;
    }
    return m;
  }

 private:
  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool is(std::string_view text, size_t k = 0) const { return peek(k).text == text; }
  bool accept(std::string_view text) {
    if (!is(text)) return false;
    ++i_;
    return true;
  }
  Status error(const std::string& what) const {
    return invalid_input("PTX line " + std::to_string(peek().line) + ": " + what + " near '" +
                         std::string(peek().text) + "'");
  }
  Status expect(std::string_view text) {
    if (accept(text)) return Status::ok();
    return error("expected '" + std::string(text) + "'");
  }

  Status module_item(ParsedModule& m) {
    const Token& t = peek();
    if (t.text == ".version" || t.text == ".address_size") {
      i_ += 2;
      return Status::ok();
    }
    if (t.text == ".target") {
      ++i_;
      while (peek().kind == Token::Kind::kIdent) {
        ++i_;
        if (!accept(",")) break;
      }
      return Status::ok();
    }
    if (t.text == ".file" || t.text == ".section" || t.text == ".loc") {
      return unsupported("PTX directive " + std::string(t.text) +
                         " (compile without -G/-lineinfo)");
    }
    if (t.text == ".pragma") {
      while (!accept(";") && peek().kind != Token::Kind::kEnd) ++i_;
      return Status::ok();
    }
    bool is_extern = false;
    while (is(".visible") || is(".extern") || is(".weak") || is(".common")) {
      is_extern |= is(".extern");
      ++i_;
    }
    if (is(".entry") || is(".func")) return function(m);
    if (is(".global") || is(".shared") || is(".const")) {
      VarDecl d;
      LEAP_RETURN_IF_ERROR(var_decl(&d));
      d.is_extern = is_extern;
      m.variables.push_back(std::move(d));
      return expect(";");
    }
    if (t.kind == Token::Kind::kIdent && t.text[0] == '.') {
      return unsupported("PTX directive " + std::string(t.text) + " at line " +
                         std::to_string(t.line));
    }
    return error("unexpected token at module scope");
  }

  // `.space [.align N] [.v2] .type name[<N>|[N]|[]] [= init]` (without the ';').
  Status var_decl(VarDecl* d) {
    d->line = peek().line;
    d->space = std::string(next().text);
    while (peek().kind == Token::Kind::kIdent && peek().text[0] == '.') {
      std::string_view w = next().text;
      if (w == ".align") {
        uint64_t a = 0;
        if (!parse_int_literal(next().text, &a)) return error("bad .align");
        // A power of two, as PTX requires, and small: a huge one pads memory areas by gigabytes.
        if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlign)
          return error(".align " + std::to_string(a) + " (a power of two up to " + std::to_string(kMaxAlign) +
                       " is allowed)");
        d->align = static_cast<uint32_t>(a);
      } else if (w == ".v2" || w == ".v4" || w == ".ptr" || w == ".volatile") {
        if (w == ".v2" || w == ".v4") return unsupported("vector-typed variable declarations");
      } else {
        d->type = std::string(w);
      }
    }
    if (peek().kind != Token::Kind::kIdent) return error("expected a variable name");
    d->name = std::string(next().text);
    if (accept("<")) {
      uint64_t n = 0;
      if (!parse_int_literal(next().text, &n)) return error("bad register range");
      if (n > kMaxRegisters)
        return unsupported("more than " + std::to_string(kMaxRegisters) + " registers");
      d->range = static_cast<int64_t>(n);
      LEAP_RETURN_IF_ERROR(expect(">"));
    }
    if (accept("[")) {
      if (accept("]")) {
        d->array_len = 0;
      } else {
        uint64_t n = 0;
        if (!parse_int_literal(next().text, &n)) return error("bad array length");
        if (n > (uint64_t{1} << 36))
          return unsupported("an array of " + std::to_string(n) + " elements");
        d->array_len = static_cast<int64_t>(n);
        LEAP_RETURN_IF_ERROR(expect("]"));
      }
      if (is("[")) return unsupported("multi-dimensional variable declarations");
    }
    if (accept("=")) {
      if (accept("{")) {
        while (!accept("}")) {
          Operand o;
          LEAP_RETURN_IF_ERROR(operand(&o));
          d->init.push_back(std::move(o));
          if (!accept(",") && !is("}")) return error("expected ',' in initializer");
        }
      } else {
        Operand o;
        LEAP_RETURN_IF_ERROR(operand(&o));
        d->init.push_back(std::move(o));
      }
    }
    return Status::ok();
  }

  Status param_list(std::vector<VarDecl>* out) {
    LEAP_RETURN_IF_ERROR(expect("("));
    while (!accept(")")) {
      VarDecl d;
      if (!is(".param") && !is(".reg")) return error("expected .param");
      LEAP_RETURN_IF_ERROR(var_decl(&d));
      out->push_back(std::move(d));
      if (!accept(",") && !is(")")) return error("expected ',' between parameters");
    }
    return Status::ok();
  }

  Status function(ParsedModule& m) {
    Function f;
    f.line = peek().line;
    f.is_entry = next().text == ".entry";
    if (!f.is_entry && is("(")) LEAP_RETURN_IF_ERROR(param_list(&f.returns));
    if (peek().kind != Token::Kind::kIdent) return error("expected a function name");
    f.name = std::string(next().text);
    if (is("(")) LEAP_RETURN_IF_ERROR(param_list(&f.params));
    // Performance directives and attributes before the body.
    while (peek().kind == Token::Kind::kIdent && peek().text[0] == '.') {
      ++i_;
      while (peek().kind == Token::Kind::kNumber || is(",")) ++i_;
    }
    if (accept(";")) {
      m.functions.push_back(std::move(f));
      return Status::ok();
    }
    LEAP_RETURN_IF_ERROR(expect("{"));
    f.has_body = true;
    int depth = 0;
    for (;;) {
      if (peek().kind == Token::Kind::kEnd) return error("unterminated function body");
      if (accept("}")) {
        if (depth == 0) break;
        --depth;
        f.body.push_back(simple(Statement::Kind::kScopeClose));
        continue;
      }
      if (accept("{")) {
        ++depth;
        f.body.push_back(simple(Statement::Kind::kScopeOpen));
        continue;
      }
      LEAP_RETURN_IF_ERROR(statement(&f.body));
    }
    m.functions.push_back(std::move(f));
    return Status::ok();
  }

  Statement simple(Statement::Kind k) const {
    Statement s;
    s.kind = k;
    s.line = t_[i_ - 1].line;
    return s;
  }

  Status statement(std::vector<Statement>* body) {
    const Token& t = peek();
    if (t.text == ".pragma") {
      while (!accept(";") && peek().kind != Token::Kind::kEnd) ++i_;
      return Status::ok();
    }
    if (t.text == ".reg" || t.text == ".local" || t.text == ".shared" || t.text == ".param" ||
        t.text == ".const" || t.text == ".global") {
      Statement s;
      s.kind = Statement::Kind::kDecl;
      s.line = t.line;
      LEAP_RETURN_IF_ERROR(var_decl(&s.decl));
      // `.reg .pred p, q;` declares several names of one type.
      std::vector<VarDecl> more;
      while (accept(",")) {
        VarDecl d = s.decl;
        d.name = std::string(next().text);
        d.range = -1;
        if (accept("<")) {
          uint64_t n = 0;
          if (!parse_int_literal(next().text, &n)) return error("bad register range");
          if (n > kMaxRegisters)
            return unsupported("more than " + std::to_string(kMaxRegisters) + " registers");
          d.range = static_cast<int64_t>(n);
          LEAP_RETURN_IF_ERROR(expect(">"));
        }
        more.push_back(std::move(d));
      }
      LEAP_RETURN_IF_ERROR(expect(";"));
      body->push_back(s);
      for (auto& d : more) {
        Statement s2 = s;
        s2.decl = std::move(d);
        body->push_back(std::move(s2));
      }
      return Status::ok();
    }
    if (t.kind == Token::Kind::kIdent && t.text[0] == '.') {
      return unsupported("PTX directive " + std::string(t.text) + " at line " +
                         std::to_string(t.line));
    }
    if (t.kind == Token::Kind::kIdent && is(":", 1)) {
      Statement s;
      s.kind = Statement::Kind::kLabel;
      s.line = t.line;
      s.opcode = std::string(t.text);
      i_ += 2;
      body->push_back(std::move(s));
      return Status::ok();
    }
    Statement s;
    s.kind = Statement::Kind::kInstruction;
    s.line = t.line;
    const size_t start = t.pos;
    if (accept("@")) {
      s.guard_negated = accept("!");
      if (peek().kind != Token::Kind::kIdent) return error("expected a guard predicate");
      s.guard = std::string(next().text);
    }
    if (peek().kind != Token::Kind::kIdent) return error("expected an instruction");
    s.opcode = std::string(next().text);
    while (!is(";")) {
      if (peek().kind == Token::Kind::kEnd) return error("missing ';'");
      Operand o;
      LEAP_RETURN_IF_ERROR(operand(&o));
      s.operands.push_back(std::move(o));
      if (!accept(",") && !is(";")) return error("expected ',' between operands");
    }
    s.text = collapse(src_.substr(start, peek().pos - start));
    ++i_;  // ';'
    body->push_back(std::move(s));
    return Status::ok();
  }

  static std::string collapse(std::string_view s) {
    std::string out;
    bool space = false;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        space = !out.empty();
      } else {
        if (space) out.push_back(' ');
        space = false;
        out.push_back(c);
      }
    }
    return out;
  }

  Status number(bool negative, Operand* o) {
    std::string_view t = next().text;
    if (t.size() == 10 && (t[1] == 'f' || t[1] == 'F') && t[0] == '0') {
      uint64_t b = 0;
      if (!parse_int_literal(std::string("0x") + std::string(t.substr(2)), &b)) {
        return error("bad f32 literal");
      }
      o->kind = Operand::Kind::kF32;
      o->bits = negative ? (b ^ 0x80000000u) : b;
      return Status::ok();
    }
    if (t.size() == 18 && (t[1] == 'd' || t[1] == 'D') && t[0] == '0') {
      uint64_t b = 0;
      if (!parse_int_literal(std::string("0x") + std::string(t.substr(2)), &b)) {
        return error("bad f64 literal");
      }
      o->kind = Operand::Kind::kF64;
      o->bits = negative ? (b ^ 0x8000000000000000ull) : b;
      return Status::ok();
    }
    if (t.find('.') != std::string_view::npos || t.find('e') != std::string_view::npos) {
      double v = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc() || p != t.data() + t.size()) return error("bad number");
      if (negative) v = -v;
      o->kind = Operand::Kind::kF64;
      std::memcpy(&o->bits, &v, 8);
      return Status::ok();
    }
    uint64_t v = 0;
    if (!parse_int_literal(t, &v)) return error("bad integer literal");
    o->kind = Operand::Kind::kInt;
    o->bits = negative ? (0 - v) : v;
    return Status::ok();
  }

  Status operand(Operand* o) {
    if (accept("[")) {
      o->kind = Operand::Kind::kAddress;
      if (peek().kind == Token::Kind::kIdent) {
        o->name = std::string(next().text);
      } else if (peek().kind == Token::Kind::kNumber) {
        Operand n;
        LEAP_RETURN_IF_ERROR(number(false, &n));
        o->offset = static_cast<int64_t>(n.bits);
      }
      LEAP_RETURN_IF_ERROR(offset_suffix(&o->offset));
      return expect("]");
    }
    if (accept("{")) {
      o->kind = Operand::Kind::kVector;
      while (!accept("}")) {
        Operand e;
        LEAP_RETURN_IF_ERROR(operand(&e));
        o->elems.push_back(std::move(e));
        if (!accept(",") && !is("}")) return error("expected ',' in vector");
      }
      return Status::ok();
    }
    if (accept("(")) {
      o->kind = Operand::Kind::kList;
      while (!accept(")")) {
        Operand e;
        LEAP_RETURN_IF_ERROR(operand(&e));
        o->elems.push_back(std::move(e));
        if (!accept(",") && !is(")")) return error("expected ',' in list");
      }
      return Status::ok();
    }
    if (accept("!")) {
      LEAP_RETURN_IF_ERROR(operand(o));
      o->negated = true;
      return Status::ok();
    }
    if (accept("-")) {
      if (peek().kind != Token::Kind::kNumber) return error("expected a number after '-'");
      return number(true, o);
    }
    if (peek().kind == Token::Kind::kNumber) return number(false, o);
    if (peek().kind != Token::Kind::kIdent) return error("expected an operand");
    o->kind = Operand::Kind::kName;
    o->name = std::string(next().text);
    if (accept("|")) {
      Operand first = *o;
      Operand second;
      LEAP_RETURN_IF_ERROR(operand(&second));
      o->kind = Operand::Kind::kPair;
      o->elems = {std::move(first), std::move(second)};
      return Status::ok();
    }
    return offset_suffix(&o->offset);
  }

  // `+4`, `+-4`, `-4` after a name or inside brackets.
  Status offset_suffix(int64_t* off) {
    while (is("+") || (is("-") && peek(1).kind == Token::Kind::kNumber)) {
      bool neg = next().text == "-";
      if (accept("-")) neg = !neg;
      Operand n;
      if (peek().kind != Token::Kind::kNumber) return error("expected an offset");
      LEAP_RETURN_IF_ERROR(number(false, &n));
      if (n.kind != Operand::Kind::kInt) return error("bad offset");
      *off += neg ? -static_cast<int64_t>(n.bits) : static_cast<int64_t>(n.bits);
    }
    return Status::ok();
  }

  std::string_view src_;
  std::vector<Token> t_;
  size_t i_ = 0;
};

}  // namespace

Expected<ParsedModule> parse_ptx(std::string_view text) {
  auto toks = tokenize(text);
  if (!toks) return toks.status();
  return Parser(text, std::move(*toks)).run();
}

}  // namespace leap::sandbox::ptx
