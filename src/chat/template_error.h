// How the chat-template module reports a bad or unsupported template inside itself: a
// TemplateError carries the status code and the template line. It is thrown only within
// src/chat/ and turned into a Status at the public API (chat_template.h), so callers see the
// house Status/Expected and never an exception.
#pragma once

#include <string>

#include "common/status.h"

namespace leap::chat {

struct TemplateError {
  StatusCode code;
  std::string message;
  int line;  // 1-based line of the template; 0 when not tied to one
};

[[noreturn]] inline void fail_unsupported(int line, const std::string& construct) {
  throw TemplateError{StatusCode::kUnsupported, "unsupported construct " + construct, line};
}
[[noreturn]] inline void fail_syntax(int line, const std::string& what) {
  throw TemplateError{StatusCode::kInvalidInput, "syntax error: " + what, line};
}
[[noreturn]] inline void fail_render(int line, const std::string& what) {
  throw TemplateError{StatusCode::kInvalidInput, what, line};
}

}  // namespace leap::chat
