// Which of the template's own variables jinja2 starts as Undefined: a name whose first mention at
// the top level (in jinja2's order) is a `set` (or a macro's definition) is the template's local
// variable from the start, so until that statement runs it is Undefined, at the top level and in
// every macro and loop body, even where the caller passed a variable of that name (bos_token,
// messages). A name read first keeps the caller's value until it is set. jinja2's If rule
// applies: a name set in only some branches of an if/elif/else is read from the caller before.
#pragma once

#include <set>
#include <string>

#include "chat/ast.h"

namespace leap::chat {

std::set<std::string> names_undefined_until_set(const Body& root);

}  // namespace leap::chat
