// Runs a parsed template: the evaluator of the Jinja subset. Scoping follows jinja2: `set` in
// the body of a for loop lives for that iteration only (that is why templates use namespace()),
// while `if` opens no scope.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
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
// own_names is names_undefined_until_set(body) (chat/root_symbols.h), found once when the
// template is loaded: they hide the context's globals of the same name until they are set.
Text render_template(const Body& body, const std::set<std::string>& own_names,
                     const RenderContext& context);

}  // namespace leap::chat
