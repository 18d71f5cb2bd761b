// The template's tokens, with jinja2's whitespace rules applied as transformers configures them:
// trim_blocks (the newline after a block or comment tag goes), lstrip_blocks (spaces and tabs
// before a block or comment tag on its own line go), `{%-`/`-%}` (all whitespace on that side
// goes) and keep_trailing_newline=False (one final newline of the source goes). So text tokens
// hold exactly the bytes the template prints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/template_error.h"

namespace leap::chat {

enum class TokenKind {
  kText,        // literal template text
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kName,        // identifiers, including keywords (if, for, in, not, and, or, is, true, ...)
  kString,      // a string literal, unescaped
  kInt,
  kFloat,
  kOp,  // operators and punctuation: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;
};

// Throws TemplateError (with the line) on text it cannot split into tokens.
std::vector<Token> lex_template(std::string_view source);

}  // namespace leap::chat
