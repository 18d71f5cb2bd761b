// Runs a parsed template: the evaluator of the Jinja subset. Scoping follows jinja2: `set` in
// the body of a for loop lives for that iteration only (that is why templates use namespace()),
// while `if` opens no scope.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"

namespace leap::chat {

struct RenderContext {
  std::vector<std::pair<std::string, Value>> globals;  // messages, tools, bos_token, ...
  std::optional<std::int64_t> now_unix_seconds;  // what strftime_now() formats (UTC); unset: error
};

// The rendered text with each byte's origin. Throws TemplateError (raise_exception() included).
Text render_template(const Body& body, const RenderContext& context);

}  // namespace leap::chat
