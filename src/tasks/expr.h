// Integer expressions over a task's parameters, as the answer format and suites use them:
// shapes ("m*k"), launch dimensions ("cdiv(n, 256)"), scratch sizes. Grammar: integer literals,
// parameter names, + - * / % (C semantics on int64, / and % by zero is an error), unary minus,
// parentheses, and the functions cdiv(a, b), min(a, b), max(a, b). Overflow is an error, not
// wrap-around, so a hostile launch line cannot sneak a huge size past the limits.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "tasks/task.h"

namespace leap::tasks {

// Evaluates `text` with the integer params of `params` bound by name. A float param used in an
// expression, an unknown name or a syntax error is invalid_input naming the token.
Expected<int64_t> eval_int_expr(std::string_view text, const Params& params);

}  // namespace leap::tasks
