// Parses a chat template into its AST. The whole template is parsed, including the branches a
// given conversation never takes, so an unsupported construct anywhere (a macro, an include, an
// unknown filter, test, method or function) is an error up front that names the construct and
// its line, never a silent gap found mid-run.
#pragma once

#include <string_view>

#include "chat/ast.h"

namespace leap::chat {

// Throws TemplateError.
Body parse_template(std::string_view source);

}  // namespace leap::chat
