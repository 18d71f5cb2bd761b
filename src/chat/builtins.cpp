// Filters, tests and methods of the Jinja subset. Filters follow jinja2 3.1 (trim and join
// print their operand with str() first); tojson is transformers' own (json.dumps with
// ensure_ascii=False, no HTML escaping), not jinja2's.
#include "chat/builtins.h"

#include <algorithm>
#include <set>

#include "chat/template_error.h"

namespace leap::chat {
namespace {

const std::set<std::string> kFilters = {"length", "count",  "trim",   "tojson", "items", "default",
                                        "d",      "join",   "reject", "select", "list",  "first",
                                        "last",   "string", "safe",   "replace"};
const std::set<std::string> kTests = {"defined",  "undefined", "none",   "string",  "mapping",
                                      "iterable", "sequence",  "number", "integer", "float",
                                      "boolean",  "true",      "false",  "equalto", "eq",
                                      "==",       "ne",        "!=",     "sameas"};
const std::set<std::string> kMethods = {"split",      "strip",    "lstrip",  "rstrip",
                                        "startswith", "endswith", "replace", "items",
                                        "keys",       "values",   "get"};
const std::set<std::string> kFunctions = {"raise_exception", "strftime_now", "namespace"};

std::uint32_t decode_at(const std::string& s, size_t begin, size_t end) {
  auto b = [&](size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[k])); };
  std::uint32_t c = b(begin);
  size_t n = end - begin;
  if (n == 1) return c;
  if (n == 2) return ((c & 0x1F) << 6) | (b(begin + 1) & 0x3F);
  if (n == 3) return ((c & 0x0F) << 12) | ((b(begin + 1) & 0x3F) << 6) | (b(begin + 2) & 0x3F);
  return ((c & 0x07) << 18) | ((b(begin + 1) & 0x3F) << 12) | ((b(begin + 2) & 0x3F) << 6) |
         (b(begin + 3) & 0x3F);
}

// Python's str.isspace() for one code point.
bool is_unicode_space(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

const Value& require_string(const Value& v, const std::string& what, int line) {
  if (!v.is_string()) {
    fail_render(line, what + " needs a str, got " + std::string(kind_name(v.kind)));
  }
  return v;
}

// str.strip/lstrip/rstrip: `chars` null means Unicode whitespace.
Text strip_text(const Text& t, const Value* chars, bool left, bool right, int line) {
  std::vector<size_t> cp = code_point_offsets(t.bytes);
  std::set<std::uint32_t> strip_set;
  bool whitespace = chars == nullptr || chars->is_none();
  if (!whitespace) {
    const std::string& cs = require_string(*chars, "strip(chars)", line).str.bytes;
    std::vector<size_t> co = code_point_offsets(cs);
    for (size_t k = 0; k + 1 < co.size(); ++k) strip_set.insert(decode_at(cs, co[k], co[k + 1]));
  }
  auto strippable = [&](size_t k) {
    std::uint32_t c = decode_at(t.bytes, cp[k], cp[k + 1]);
    return whitespace ? is_unicode_space(c) : strip_set.count(c) > 0;
  };
  size_t n = cp.size() - 1, lo = 0, hi = n;
  if (left) {
    while (lo < hi && strippable(lo)) ++lo;
  }
  if (right) {
    while (hi > lo && strippable(hi - 1)) --hi;
  }
  return t.substr(cp[lo], cp[hi] - cp[lo]);
}

Value split_text(const Text& t, const Value* sep, const Value* maxsplit_v, int line) {
  std::int64_t maxsplit = maxsplit_v && maxsplit_v->kind == Value::Kind::kInt ? maxsplit_v->i : -1;
  Array parts;
  if (sep == nullptr || sep->is_none()) {
    std::vector<size_t> cp = code_point_offsets(t.bytes);
    size_t n = cp.size() - 1, k = 0;
    auto space = [&](size_t idx) {
      return is_unicode_space(decode_at(t.bytes, cp[idx], cp[idx + 1]));
    };
    while (k < n) {
      while (k < n && space(k)) ++k;
      if (k == n) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        size_t end = n;
        while (end > k && space(end - 1)) --end;
        parts.push_back(Value::string(t.substr(cp[k], cp[end] - cp[k])));
        break;
      }
      size_t start = k;
      while (k < n && !space(k)) ++k;
      parts.push_back(Value::string(t.substr(cp[start], cp[k] - cp[start])));
    }
    return Value::list(std::move(parts));
  }
  const std::string& s = require_string(*sep, "split(sep)", line).str.bytes;
  if (s.empty()) fail_render(line, "split(): empty separator");
  size_t pos = 0;
  while (true) {
    size_t hit = t.bytes.find(s, pos);
    if (hit == std::string::npos ||
        (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit)) {
      parts.push_back(Value::string(t.substr(pos)));
      break;
    }
    parts.push_back(Value::string(t.substr(pos, hit - pos)));
    pos = hit + s.size();
  }
  return Value::list(std::move(parts));
}

Value replace_text(const Text& t, const Value& old_v, const Value& new_v, const Value* count_v,
                   int line) {
  const std::string& old_s = require_string(old_v, "replace(old)", line).str.bytes;
  const Text& new_t = require_string(new_v, "replace(new)", line).str;
  std::int64_t count = count_v && count_v->kind == Value::Kind::kInt ? count_v->i : -1;
  Text out;
  if (old_s.empty()) {  // Python inserts `new` before every code point and at the end
    std::vector<size_t> cp = code_point_offsets(t.bytes);
    std::int64_t done = 0;
    for (size_t k = 0; k + 1 < cp.size(); ++k) {
      if (count < 0 || done < count) {
        out.append(new_t);
        ++done;
      }
      out.append(t.substr(cp[k], cp[k + 1] - cp[k]));
    }
    if (count < 0 || done < count) out.append(new_t);
    return Value::string(out);
  }
  size_t pos = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = t.bytes.find(old_s, pos);
    if (hit == std::string::npos) break;
    out.append(t.substr(pos, hit - pos));
    out.append(new_t);
    pos = hit + old_s.size();
    ++done;
  }
  out.append(t.substr(pos));
  return Value::string(out);
}

bool affix_matches(const Text& t, const Value& affix, bool prefix, int line) {
  auto one = [&](const Value& a) {
    const std::string& s =
        require_string(a, prefix ? "startswith()" : "endswith()", line).str.bytes;
    if (s.size() > t.bytes.size()) return false;
    return prefix ? t.bytes.compare(0, s.size(), s) == 0
                  : t.bytes.compare(t.bytes.size() - s.size(), s.size(), s) == 0;
  };
  if (affix.kind == Value::Kind::kArray) {
    return std::any_of(affix.array->begin(), affix.array->end(), one);
  }
  return one(affix);
}

bool contains_content(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kString:
      return v.str.has_content();
    case Value::Kind::kArray:
      return std::any_of(v.array->begin(), v.array->end(), contains_content);
    case Value::Kind::kObject:
      return v.keys_are_content ||
             std::any_of(v.object->begin(), v.object->end(),
                         [](const auto& kv) { return contains_content(kv.second); });
    default:
      return false;
  }
}

Value key_value(const std::string& key, bool content) {
  return Value::string(content ? Text::from_content(key) : Text::from_template(key));
}

Value item_pairs(const Value& v) {
  Array pairs;
  for (const auto& [k, val] : *v.object)
    pairs.push_back(Value::list({key_value(k, v.keys_are_content), val}));
  return Value::list(std::move(pairs));
}

Value to_json_text(const Value& v, const CallArgs& call) {
  JsonStyle style;
  if (const Value* a = call.get(0, "ensure_ascii")) style.ensure_ascii = a->truthy();
  if (const Value* ind = call.get(1, "indent"); ind && !ind->is_none()) {
    if (ind->kind != Value::Kind::kInt) fail_render(call.line, "tojson(indent=...) needs an int");
    // Python's json.dumps: an indent of 0 or less breaks lines without indenting them.
    if (ind->i > 4096) fail_unsupported(call.line, "'tojson(indent=...)' above 4096");
    style.indent = static_cast<int>(std::max<std::int64_t>(ind->i, 0));
  }
  if (const Value* sep = call.get(2, "separators"); sep && !sep->is_none()) {
    if (sep->kind != Value::Kind::kArray || sep->array->size() != 2 ||
        !(*sep->array)[0].is_string() || !(*sep->array)[1].is_string()) {
      fail_render(call.line, "tojson(separators=...) needs two strings");
    }
    style.item_separator = (*sep->array)[0].str.bytes;
    style.key_separator = (*sep->array)[1].str.bytes;
  }
  if (const Value* sk = call.get(3, "sort_keys")) style.sort_keys = sk->truthy();
  std::string out, error;
  if (!dump_json(v, style, &out, &error)) fail_render(call.line, "tojson: " + error);
  // The JSON of the caller's data is content: its bytes must never turn into special tokens.
  return Value::string(contains_content(v) ? Text::from_content(std::move(out))
                                           : Text::from_template(std::move(out)));
}

}  // namespace

bool is_known_filter(const std::string& name) {
  return kFilters.count(name) > 0;
}
bool is_known_test(const std::string& name) {
  return kTests.count(name) > 0;
}
bool is_known_method(const std::string& name) {
  return kMethods.count(name) > 0;
}
bool is_known_function(const std::string& name) {
  return kFunctions.count(name) > 0;
}

const Value* CallArgs::get(size_t index, const char* name) const {
  if (index < args.size()) return &args[index];
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::vector<size_t> code_point_offsets(const std::string& s) {
  std::vector<size_t> out;
  for (size_t k = 0; k < s.size(); ++k) {
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) out.push_back(k);
  }
  out.push_back(s.size());
  return out;
}

std::int64_t python_len(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<std::int64_t>(code_point_offsets(v.str.bytes).size() - 1);
    case Value::Kind::kArray:
      return static_cast<std::int64_t>(v.array->size());
    case Value::Kind::kObject:
      return static_cast<std::int64_t>(v.object->size());
    default:
      fail_render(line, std::string("object of type '") + kind_name(v.kind) + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kArray:
      return *v.array;
    case Value::Kind::kObject: {
      std::vector<Value> keys;
      for (const auto& kv : *v.object) keys.push_back(key_value(kv.first, v.keys_are_content));
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<size_t> cp = code_point_offsets(v.str.bytes);
      std::vector<Value> chars;
      for (size_t k = 0; k + 1 < cp.size(); ++k)
        chars.push_back(Value::string(v.str.substr(cp[k], cp[k + 1] - cp[k])));
      return chars;
    }
    default:
      fail_render(line, std::string("'") + kind_name(v.kind) + "' object is not iterable");
  }
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& call) {
  const int line = call.line;
  if (name == "length" || name == "count") return Value::integer(python_len(v, line));
  if (name == "trim")
    return Value::string(strip_text(to_text(v), call.get(0, "chars"), true, true, line));
  if (name == "tojson") return to_json_text(v, call);
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (v.kind != Value::Kind::kObject)
      fail_render(line, "items: can only get item pairs from a mapping");
    return item_pairs(v);
  }
  if (name == "default" || name == "d") {
    const Value* fallback = call.get(0, "default_value");
    const Value* boolean = call.get(1, "boolean");
    bool use_default = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    if (!use_default) return v;
    return fallback ? *fallback : Value::template_string("");
  }
  if (name == "join") {
    if (call.get(1, "attribute")) fail_unsupported(line, "'join(attribute=...)'");
    const Value* sep = call.get(0, "d");
    Text out;
    bool first = true;
    for (const Value& item : iterate(v, line)) {
      if (!first && sep) out.append(to_text(*sep));
      first = false;
      out.append(to_text(item));
    }
    return Value::string(out);
  }
  if (name == "reject" || name == "select") {
    CallArgs test_args;
    test_args.line = line;
    for (size_t k = 1; k < call.args.size(); ++k) test_args.args.push_back(call.args[k]);
    Array kept;
    for (const Value& item : iterate(v, line)) {
      bool passed;
      if (call.args.empty()) {
        passed = item.truthy();
      } else {
        const Value& test = call.args[0];
        if (!test.is_string() || !is_known_test(test.str.bytes)) {
          fail_unsupported(line, "test '" + to_text(test).bytes + "' in " + name + "()");
        }
        passed = apply_test(test.str.bytes, item, test_args);
      }
      if (passed == (name == "select")) kept.push_back(item);
    }
    return Value::list(std::move(kept));
  }
  if (name == "list") return Value::list(iterate(v, line));
  if (name == "first" || name == "last") {
    std::vector<Value> items = iterate(v, line);
    if (items.empty()) return Value::undefined();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "string") return Value::string(to_text(v));
  if (name == "replace") {  // jinja2 prints the operand, old and new with str() first
    const Value* old_v = call.get(0, "old");
    const Value* new_v = call.get(1, "new");
    if (!old_v || !new_v) fail_render(line, "replace needs two arguments");
    if (call.args.size() + call.kwargs.size() > 3)
      fail_render(line, "replace takes at most 3 arguments");
    for (const auto& [key, v] : call.kwargs)
      if (key != "old" && key != "new" && key != "count")
        fail_render(line, "replace got an unexpected keyword argument '" + key + "'");
    const Value* count_v = call.get(2, "count");
    if (count_v && !count_v->is_none() && count_v->kind != Value::Kind::kInt)
      fail_render(line, "replace(count) needs an int");
    return replace_text(to_text(v), Value::string(to_text(*old_v)), Value::string(to_text(*new_v)),
                        count_v, line);
  }
  // jinja2's Markup: with autoescaping off (transformers' environment) only the type changes, so
  // a string stays as it is, its provenance included ('x|tojson|safe').
  if (name == "safe") return v.is_string() ? v : Value::string(to_text(v));
  fail_unsupported(line, "filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& call) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.kind == K::kObject;
  if (name == "iterable") {
    return v.kind == K::kUndefined || v.kind == K::kString || v.kind == K::kArray ||
           v.kind == K::kObject;
  }
  if (name == "sequence")
    return v.kind == K::kString || v.kind == K::kArray || v.kind == K::kObject;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::kInt;
  if (name == "float") return v.kind == K::kFloat;
  if (name == "boolean") return v.kind == K::kBool;
  if (name == "true") return v.kind == K::kBool && v.b;
  if (name == "false") return v.kind == K::kBool && !v.b;
  const Value* other = call.get(0, "other");
  if (!other) fail_render(call.line, "test '" + name + "' needs an argument");
  if (name == "equalto" || name == "eq" || name == "==") return values_equal(v, *other);
  if (name == "ne" || name == "!=") return !values_equal(v, *other);
  if (name == "sameas") {
    if (v.kind != other->kind) return false;
    if (v.kind == K::kNone) return true;
    if (v.kind == K::kBool) return v.b == other->b;
    fail_unsupported(call.line, "'is sameas' on a " + std::string(kind_name(v.kind)));
  }
  fail_unsupported(call.line, "test '" + name + "'");
}

Value call_method(const Value& obj, const std::string& name, const CallArgs& call) {
  const int line = call.line;
  if (obj.is_string()) {
    const Text& t = obj.str;
    if (name == "strip")
      return Value::string(strip_text(t, call.get(0, "chars"), true, true, line));
    if (name == "lstrip")
      return Value::string(strip_text(t, call.get(0, "chars"), true, false, line));
    if (name == "rstrip")
      return Value::string(strip_text(t, call.get(0, "chars"), false, true, line));
    if (name == "split") return split_text(t, call.get(0, "sep"), call.get(1, "maxsplit"), line);
    if (name == "startswith" || name == "endswith") {
      const Value* affix = call.get(0, "prefix");
      if (!affix || call.args.size() > 1)
        fail_unsupported(line, "'." + name + "()' with start/end arguments");
      return Value::boolean(affix_matches(t, *affix, name == "startswith", line));
    }
    if (name == "replace") {
      const Value* old_v = call.get(0, "old");
      const Value* new_v = call.get(1, "new");
      if (!old_v || !new_v) fail_render(line, "replace() needs two arguments");
      if (call.args.size() + call.kwargs.size() > 3)
        fail_render(line, "replace() takes at most 3 arguments");
      return replace_text(t, *old_v, *new_v, call.get(2, "count"), line);
    }
  } else if (obj.kind == Value::Kind::kObject) {
    if (name == "items") return item_pairs(obj);
    if (name == "keys") return Value::list(iterate(obj, line));
    if (name == "values") {
      Array values;
      for (const auto& kv : *obj.object) values.push_back(kv.second);
      return Value::list(std::move(values));
    }
    if (name == "get") {
      const Value* key = call.get(0, "key");
      if (!key) fail_render(line, "get() needs a key");
      const Value* found = key->is_string() ? obj.find(key->str.bytes) : nullptr;
      if (found) return *found;
      const Value* fallback = call.get(1, "default");
      return fallback ? *fallback : Value::none();
    }
  } else if (obj.is_undefined()) {
    fail_render(line, "'." + name + "()' called on an undefined value");
  }
  fail_render(line,
              std::string("'") + kind_name(obj.kind) + "' object has no method '" + name + "'");
}

}  // namespace leap::chat
