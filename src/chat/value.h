// Values of the chat-template interpreter: the Python objects a Jinja template sees (None, bool,
// int, float, str, list, dict, jinja's Undefined and namespace), with Python's printing, truth and
// equality rules, because the oracle is jinja2 running on Python.
//
// Every string carries its provenance byte by byte: template (literals in the template, the
// tokenizer's bos/eos, the caller's options) or content (anything that came from the messages or
// tools). Operations that move bytes (+, ~, slicing, strip, split, replace, join, tojson) move
// the provenance with them, so the rendered prompt can say which of its bytes are the template's
// own markers. Lists and dicts are shared and immutable once built; a namespace is shared and
// mutable (that is what `set ns.x = ...` is for).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace leap::chat {

enum class Origin : std::uint8_t { kTemplate = 0, kContent = 1 };

// A string with one Origin per byte. An empty `origin` means every byte is kTemplate, the common
// case, so template literals cost nothing extra.
struct Text {
  std::string bytes;
  std::vector<Origin> origin;  // empty, or bytes.size() entries

  static Text from_template(std::string s) { return {std::move(s), {}}; }
  static Text from_content(std::string s);
  Origin origin_at(size_t i) const { return origin.empty() ? Origin::kTemplate : origin[i]; }
  bool has_content() const;
  void append(const Text& other);
  void append_template(std::string_view s);
  Text substr(size_t pos, size_t len = std::string::npos) const;
};

struct Value;
struct Stmt;  // chat/ast.h: a macro's definition
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // dict, in insertion order

struct Value {
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kArray,
    kObject,
    kNamespace,
    kCallable,  // a global function (raise_exception, strftime_now, namespace) or a macro; str
                // holds its name
  };
  Kind kind = Kind::kUndefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0.0;
  Text str;
  std::shared_ptr<const Array> array;
  std::shared_ptr<Object> object;  // kObject (never mutated once built) and kNamespace (mutable)
  bool keys_are_content = false;   // kObject from the caller's data: its keys are content too
  bool tuple = false;              // kArray of a tuple literal: printed (a, b) and never == a list
  const Stmt* macro = nullptr;     // kCallable made by {% macro %}: its definition (the parsed
                                   // template outlives every rendering of it)

  static Value undefined() { return {}; }
  static Value none();
  static Value boolean(bool v);
  static Value integer(std::int64_t v);
  static Value floating(double v);
  static Value string(Text t);
  static Value template_string(std::string s) { return string(Text::from_template(std::move(s))); }
  static Value list(Array items);
  static Value dict(Object items);
  static Value new_namespace(Object attrs);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  bool is_mapping() const { return kind == Kind::kObject || kind == Kind::kNamespace; }

  // Python's bool(x); Undefined is false.
  bool truthy() const;
  // Dict or namespace lookup; nullptr when absent.
  const Value* find(std::string_view key) const;
};

const char* kind_name(Value::Kind kind);

// Python's str(x) as jinja prints it ({{ x }}); Undefined prints as nothing.
Text to_text(const Value& v);
// Python's repr(x), used for the elements of printed lists and dicts.
Text to_repr(const Value& v);
// Python's repr(float): the shortest round-trip digits, exponent outside [1e-4, 1e16).
std::string format_python_float(double v);
// Python's ==, with 1 == 1.0 == True.
bool values_equal(const Value& a, const Value& b);

// JSON (caller data) to a Value whose strings are all kContent, keeping key order.
Value value_from_json(const nlohmann::ordered_json& j, Origin origin);

struct JsonStyle {
  int indent = -1;             // -1: None (one line)
  std::string item_separator;  // empty: Python's default for the indent
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // transformers' default; True escapes every non-ASCII code point
};
// json.dumps(v, ensure_ascii=..., ...), as transformers' tojson filter calls it. Returns false
// (with `error`) for what json.dumps refuses: Undefined, namespaces.
bool dump_json(const Value& v, const JsonStyle& style, std::string* out, std::string* error);

}  // namespace leap::chat
