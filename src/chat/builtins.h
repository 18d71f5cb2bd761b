// The filters, tests and methods the Jinja subset implements, with Python's semantics (str
// methods count code points, strip() strips Unicode whitespace). The parser asks the is_known_*
// functions so that anything else is refused when the template is loaded.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace leap::chat {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);
bool is_known_method(const std::string& name);
bool is_known_function(const std::string& name);

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  int line = 0;

  // The argument at `index` or named `name`; nullptr when given neither way.
  const Value* get(size_t index, const char* name) const;
};

// Each throws TemplateError (naming `line`) on a type or argument error.
Value apply_filter(const std::string& name, const Value& operand, const CallArgs& call);
bool apply_test(const std::string& name, const Value& operand, const CallArgs& call);
Value call_method(const Value& object, const std::string& name, const CallArgs& call);

// Python's len(): code points of a str, items of a list or dict; 0 for Undefined.
std::int64_t python_len(const Value& v, int line);
// Byte offset of each code point of `s`, plus s.size() at the end.
std::vector<size_t> code_point_offsets(const std::string& s);
// The items a for loop visits: list items, dict keys, str characters; none for Undefined.
std::vector<Value> iterate(const Value& v, int line);

}  // namespace leap::chat
