// Splits a template into text and tag tokens the way jinja2's lexer does with trim_blocks and
// lstrip_blocks on. `line_starting` mirrors jinja2: lstrip_blocks also applies to a tag that
// opens the text after a tag whose match ended in a newline.
#include "chat/lexer.h"

#include <cctype>
#include <cstdint>

namespace leap::chat {
namespace {

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string rstrip_space(std::string s) {
  while (!s.empty() && is_py_space(s.back())) s.pop_back();
  return s;
}

void append_utf8(std::uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Python's "unicode-escape" decoding of a literal's body, as jinja2 applies it.
std::string unescape_literal(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t n) {
      std::uint32_t cp = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + k]))) {
          fail_syntax(line, "bad \\x/\\u escape in string literal");
        }
        const char d = static_cast<char>(std::tolower(static_cast<unsigned char>(body[i + k])));
        cp = cp * 16 + static_cast<std::uint32_t>(d <= '9' ? d - '0' : d - 'a' + 10);
      }
      i += n;
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        fail_unsupported(
            line, "escape of a code point that is not valid UTF-8 (surrogate or beyond U+10FFFF)");
      }
      append_utf8(cp, &out);
    };
    switch (e) {
      case '\n':
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        if (e >= '0' && e <= '7') {
          std::uint32_t cp = 0;
          size_t k = 0;
          for (; k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7'; ++k) {
            cp = cp * 8 + static_cast<std::uint32_t>(body[i + k] - '0');
          }
          i += k - 1;
          append_utf8(cp, &out);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t start = src_.find('{', pos_);
      while (start != std::string_view::npos && start + 1 < src_.size() && src_[start + 1] != '{' &&
             src_[start + 1] != '%' && src_[start + 1] != '#') {
        start = src_.find('{', start + 1);
      }
      if (start == std::string_view::npos || start + 1 >= src_.size()) {
        emit_text(std::string(src_.substr(pos_)));
        advance_to(src_.size());
        break;
      }
      std::string text(src_.substr(pos_, start - pos_));
      char kind = src_[start + 1];
      char modifier = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (modifier == '-') {
        text = rstrip_space(text);
      } else if (modifier != '+' && kind != '{') {
        // lstrip_blocks: drop the spaces and tabs that alone precede the tag on its line.
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) &&
            text.find_first_not_of(" \t", l_pos) == std::string::npos) {
          text.resize(l_pos);
        }
      }
      emit_text(std::move(text));
      advance_to(start);
      size_t body = start + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      if (kind == '#') {
        size_t end = src_.find("#}", body);
        if (end == std::string_view::npos) fail_syntax(line_, "comment not closed with #}");
        size_t after = end + 2;
        if (end > body && src_[end - 1] == '-') {
          while (after < src_.size() && is_py_space(src_[after])) ++after;
        } else if (after < src_.size() && src_[after] == '\n') {
          ++after;  // trim_blocks
        }
        line_starting = src_[after - 1] == '\n';
        advance_to(after);
        continue;
      }
      bool block = kind == '%';
      tokens_.push_back({block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, "", line_});
      advance_to(body);
      line_starting = lex_tag_body(block);
    }
    tokens_.push_back({TokenKind::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, std::move(text), line_});
  }
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_) {
      if (src_[pos_] == '\n') ++line_;
    }
  }
  bool starts_with(std::string_view s) const { return src_.substr(pos_, s.size()) == s; }

  // Lexes up to and including the closing %} or }}; returns whether what it consumed ended in
  // a newline (jinja2's line_starting).
  bool lex_tag_body(bool block) {
    const std::string_view close = block ? "%}" : "}}";
    int braces = 0;
    while (true) {
      while (pos_ < src_.size() && is_py_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size())
        fail_syntax(line_, std::string("tag not closed with ") + std::string(close));
      if (braces == 0 &&
          (starts_with(close) || (src_[pos_] == '-' && src_.substr(pos_ + 1, 2) == close) ||
           (src_[pos_] == '+' && src_.substr(pos_ + 1, 2) == close))) {
        char modifier = src_[pos_];
        size_t after = pos_ + (modifier == '-' || modifier == '+' ? 3 : 2);
        if (modifier == '-') {
          while (after < src_.size() && is_py_space(src_[after])) ++after;
        } else if (block && modifier != '+' && after < src_.size() && src_[after] == '\n') {
          ++after;  // trim_blocks
        }
        tokens_.push_back({block ? TokenKind::kBlockEnd : TokenKind::kVarEnd, "", line_});
        advance_to(after);
        return src_[after - 1] == '\n';
      }
      lex_expression_token(&braces);
    }
  }

  void lex_expression_token(int* braces) {
    char c = src_[pos_];
    int line = line_;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
        ++end;
      tokens_.push_back({TokenKind::kName, std::string(src_.substr(pos_, end - pos_)), line});
      advance_to(end);
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      bool is_float = false;
      while (end < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
        ++end;
      if (end + 1 < src_.size() && src_[end] == '.' &&
          std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
        is_float = true;
        ++end;
        while (end < src_.size() && std::isdigit(static_cast<unsigned char>(src_[end]))) ++end;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
          is_float = true;
          end = e;
          while (end < src_.size() && std::isdigit(static_cast<unsigned char>(src_[end]))) ++end;
        }
      }
      std::string digits;
      for (char d : src_.substr(pos_, end - pos_)) {
        if (d != '_') digits += d;
      }
      tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, digits, line});
      advance_to(end);
      return;
    }
    if (c == '\'' || c == '"') {
      size_t end = pos_ + 1;
      while (end < src_.size() && src_[end] != c) {
        if (src_[end] == '\\') ++end;
        ++end;
      }
      if (end >= src_.size()) fail_syntax(line, "string literal not closed");
      tokens_.push_back({TokenKind::kString,
                         unescape_literal(src_.substr(pos_ + 1, end - pos_ - 1), line), line});
      advance_to(end + 1);
      return;
    }
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                       "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                       "]",  "{",  "}",  ",",  ".",  ":",  "|"};
    for (const char* op : kOps) {
      if (starts_with(op)) {
        if (*op == '{') ++*braces;
        if (*op == '}') --*braces;
        tokens_.push_back({TokenKind::kOp, op, line});
        advance_to(pos_ + std::string_view(op).size());
        return;
      }
    }
    fail_syntax(line, std::string("unexpected character '") + c + "'");
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  // keep_trailing_newline=False: jinja2 drops one final newline of the source.
  if (!source.empty() && source.back() == '\n') source.remove_suffix(1);
  if (!source.empty() && source.back() == '\r') source.remove_suffix(1);
  return Lexer(source).run();
}

}  // namespace leap::chat
