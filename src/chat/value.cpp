// Python's printing, truth and equality for template values, and json.dumps as transformers
// calls it (ensure_ascii=False).
#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace leap::chat {

Text Text::from_content(std::string s) {
  Text t{std::move(s), {}};
  t.origin.assign(t.bytes.size(), Origin::kContent);
  return t;
}

bool Text::has_content() const {
  return std::find(origin.begin(), origin.end(), Origin::kContent) != origin.end();
}

void Text::append(const Text& other) {
  if (!origin.empty() || !other.origin.empty()) {
    origin.resize(bytes.size(), Origin::kTemplate);
    if (other.origin.empty()) {
      origin.insert(origin.end(), other.bytes.size(), Origin::kTemplate);
    } else {
      origin.insert(origin.end(), other.origin.begin(), other.origin.end());
    }
  }
  bytes += other.bytes;
}

void Text::append_template(std::string_view s) {
  if (!origin.empty()) origin.insert(origin.end(), s.size(), Origin::kTemplate);
  bytes.append(s);
}

Text Text::substr(size_t pos, size_t len) const {
  pos = std::min(pos, bytes.size());
  len = std::min(len, bytes.size() - pos);
  Text t{bytes.substr(pos, len), {}};
  if (!origin.empty()) t.origin.assign(origin.begin() + pos, origin.begin() + pos + len);
  return t;
}

Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::kBool;
  v.b = x;
  return v;
}
Value Value::integer(std::int64_t x) {
  Value v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}
Value Value::floating(double x) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = x;
  return v;
}
Value Value::string(Text t) {
  Value v;
  v.kind = Kind::kString;
  v.str = std::move(t);
  return v;
}
Value Value::list(Array items) {
  Value v;
  v.kind = Kind::kArray;
  v.array = std::make_shared<const Array>(std::move(items));
  return v;
}
Value Value::dict(Object items) {
  Value v;
  v.kind = Kind::kObject;
  v.object = std::make_shared<Object>(std::move(items));
  return v;
}
Value Value::new_namespace(Object attrs) {
  Value v = dict(std::move(attrs));
  v.kind = Kind::kNamespace;
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b;
    case Kind::kInt:
      return i != 0;
    case Kind::kFloat:
      return f != 0.0;
    case Kind::kString:
      return !str.bytes.empty();
    case Kind::kArray:
      return !array->empty();
    case Kind::kObject:
      return !object->empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

const Value* Value::find(std::string_view key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *object) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kUndefined:
      return "undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kArray:
      return "list";
    case Value::Kind::kObject:
      return "dict";
    case Value::Kind::kNamespace:
      return "namespace";
    case Value::Kind::kCallable:
      return "function";
  }
  return "?";
}

std::string format_python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02": shortest round-trip digits
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (negative) out.push_back('-');
  if (exponent < -4 || exponent >= 16) {
    out.append(digits, 0, 1);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    out.append(exp_buf);
    return out;
  }
  if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
    return out;
  }
  size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len) {
    out.append(digits);
    out.append(int_len - digits.size(), '0');
    out.append(".0");
    return out;
  }
  out.append(digits, 0, int_len);
  out.push_back('.');
  out.append(digits, int_len, std::string::npos);
  return out;
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ".
Text repr_string(const Text& s) {
  bool has_single = s.bytes.find('\'') != std::string::npos;
  bool has_double = s.bytes.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  Text out;
  out.append_template(std::string_view(&quote, 1));
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s.bytes[i]);
    std::string piece;
    if (c == '\\')
      piece = "\\\\";
    else if (c == '\n')
      piece = "\\n";
    else if (c == '\r')
      piece = "\\r";
    else if (c == '\t')
      piece = "\\t";
    else if (c == static_cast<unsigned char>(quote))
      piece = std::string("\\") + quote;
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      piece = buf;
    } else {
      piece = std::string(1, static_cast<char>(c));
    }
    Text t{piece, {}};
    if (s.origin_at(i) == Origin::kContent) t.origin.assign(piece.size(), Origin::kContent);
    out.append(t);
  }
  out.append_template(std::string_view(&quote, 1));
  return out;
}

}  // namespace

Text to_repr(const Value& v) {
  if (v.kind == Value::Kind::kString) return repr_string(v.str);
  return to_text(v);
}

Text to_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kNone:
      return Text::from_template("None");
    case Value::Kind::kBool:
      return Text::from_template(v.b ? "True" : "False");
    case Value::Kind::kInt:
      return Text::from_template(std::to_string(v.i));
    case Value::Kind::kFloat:
      return Text::from_template(format_python_float(v.f));
    case Value::Kind::kString:
      return v.str;
    case Value::Kind::kArray: {
      Text out = Text::from_template(v.tuple ? "(" : "[");
      for (size_t k = 0; k < v.array->size(); ++k) {
        if (k) out.append_template(", ");
        out.append(to_repr((*v.array)[k]));
      }
      if (v.tuple && v.array->size() == 1) out.append_template(",");
      out.append_template(v.tuple ? ")" : "]");
      return out;
    }
    case Value::Kind::kObject: {
      Text out = Text::from_template("{");
      for (size_t k = 0; k < v.object->size(); ++k) {
        if (k) out.append_template(", ");
        out.append(repr_string(Text::from_template((*v.object)[k].first)));
        out.append_template(": ");
        out.append(to_repr((*v.object)[k].second));
      }
      out.append_template("}");
      return out;
    }
    case Value::Kind::kNamespace:
      return Text::from_template("<Namespace>");
    case Value::Kind::kCallable:
      if (v.macro) return Text::from_template("<Macro '" + v.str.bytes + "'>");
      return Text::from_template("<function " + v.str.bytes + ">");
  }
  return {};
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    auto as_double = [](const Value& v) {
      return v.kind == Value::Kind::kFloat
                 ? v.f
                 : static_cast<double>(v.kind == Value::Kind::kBool ? v.b : v.i);
    };
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat) {
      auto as_int = [](const Value& v) {
        return v.kind == Value::Kind::kBool ? std::int64_t{v.b} : v.i;
      };
      return as_int(a) == as_int(b);
    }
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str.bytes == b.str.bytes;
    case Value::Kind::kArray:
      if (a.tuple != b.tuple || a.array->size() != b.array->size()) return false;
      for (size_t k = 0; k < a.array->size(); ++k) {
        if (!values_equal((*a.array)[k], (*b.array)[k])) return false;
      }
      return true;
    case Value::Kind::kObject: {
      if (a.object->size() != b.object->size()) return false;
      for (const auto& [key, val] : *a.object) {
        const Value* other = b.find(key);
        if (!other || !values_equal(val, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return a.object == b.object;
    case Value::Kind::kCallable:
      return a.str.bytes == b.str.bytes && a.macro == b.macro;
    default:
      return false;
  }
}

Value value_from_json(const nlohmann::ordered_json& j, Origin origin) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string: {
      std::string s = j.get<std::string>();
      return Value::string(origin == Origin::kContent ? Text::from_content(std::move(s))
                                                      : Text::from_template(std::move(s)));
    }
    case nlohmann::ordered_json::value_t::array: {
      Array items;
      for (const auto& e : j) items.push_back(value_from_json(e, origin));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object items;
      for (const auto& [k, e] : j.items()) items.emplace_back(k, value_from_json(e, origin));
      Value v = Value::dict(std::move(items));
      v.keys_are_content = origin == Origin::kContent;
      return v;
    }
    default:
      return Value::undefined();
  }
}

namespace {

// ensure_ascii: every code point above 0x7F as \uXXXX (a surrogate pair above 0xFFFF), lower-
// case hex, as Python's json.dumps writes it.
void dump_json_string(const std::string& s, std::string* out, bool ensure_ascii) {
  *out += '"';
  for (size_t at = 0; at < s.size(); ++at) {
    const unsigned char c = static_cast<unsigned char>(s[at]);
    if (ensure_ascii && c >= 0x80) {
      const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (n > 1 && at + n <= s.size()) {
        std::uint32_t cp = c & (0xFF >> (n + 1));
        for (size_t k = 1; k < n; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(s[at + k]) & 0x3F);
        char buf[16];
        if (cp > 0xFFFF) {
          cp -= 0x10000;
          std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                        0xDC00 + (cp & 0x3FF));
        } else {
          std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
        }
        *out += buf;
        at += n - 1;
        continue;
      }
    }
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

bool dump_json_at(const Value& v, const JsonStyle& style, int level, std::string* out,
                  std::string* error) {
  const std::string item_sep =
      !style.item_separator.empty() ? style.item_separator : (style.indent >= 0 ? "," : ", ");
  auto newline = [&](int lvl) {
    if (style.indent < 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(style.indent) * static_cast<size_t>(lvl), ' ');
  };
  switch (v.kind) {
    case Value::Kind::kNone:
      *out += "null";
      return true;
    case Value::Kind::kBool:
      *out += v.b ? "true" : "false";
      return true;
    case Value::Kind::kInt:
      *out += std::to_string(v.i);
      return true;
    case Value::Kind::kFloat:
      if (std::isnan(v.f))
        *out += "NaN";
      else if (std::isinf(v.f))
        *out += v.f > 0 ? "Infinity" : "-Infinity";
      else
        *out += format_python_float(v.f);
      return true;
    case Value::Kind::kString:
      dump_json_string(v.str.bytes, out, style.ensure_ascii);
      return true;
    case Value::Kind::kArray: {
      if (v.array->empty()) {
        *out += "[]";
        return true;
      }
      *out += "[";
      for (size_t k = 0; k < v.array->size(); ++k) {
        if (k) *out += item_sep;
        newline(level + 1);
        if (!dump_json_at((*v.array)[k], style, level + 1, out, error)) return false;
      }
      newline(level);
      *out += "]";
      return true;
    }
    case Value::Kind::kObject: {
      if (v.object->empty()) {
        *out += "{}";
        return true;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.object) items.push_back(&kv);
      if (style.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      *out += "{";
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) *out += item_sep;
        newline(level + 1);
        dump_json_string(items[k]->first, out, style.ensure_ascii);
        *out += style.key_separator;
        if (!dump_json_at(items[k]->second, style, level + 1, out, error)) return false;
      }
      newline(level);
      *out += "}";
      return true;
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kNamespace:
    case Value::Kind::kCallable:
      *error = std::string("Object of type ") + kind_name(v.kind) + " is not JSON serializable";
      return false;
  }
  return false;
}

}  // namespace

bool dump_json(const Value& v, const JsonStyle& style, std::string* out, std::string* error) {
  return dump_json_at(v, style, 0, out, error);
}

}  // namespace leap::chat
