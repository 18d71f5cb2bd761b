// The evaluator: statements write to one Text, expressions yield Values. Python semantics
// throughout: `and`/`or` return an operand, `+` needs matching types, `~` prints both sides,
// `in` is substring/element/key membership, slices take Python's [start:stop:step].
#include "chat/render.h"

#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <optional>

#include "chat/builtins.h"
#include "chat/template_error.h"

namespace leap::chat {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

// Python's slice indices for a sequence of length n.
std::vector<size_t> slice_indices(std::int64_t n, std::optional<std::int64_t> start,
                                  std::optional<std::int64_t> stop, std::int64_t step) {
  std::vector<size_t> out;
  auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    return std::max(lo, std::min(hi, v));
  };
  auto norm = [&](std::optional<std::int64_t> v, std::int64_t dflt, std::int64_t lo,
                  std::int64_t hi) {
    if (!v) return dflt;
    std::int64_t x = *v < 0 ? *v + n : *v;
    return clamp(x, lo, hi);
  };
  if (step > 0) {
    std::int64_t b = norm(start, 0, 0, n), e = norm(stop, n, 0, n);
    for (std::int64_t k = b; k < e; k += step) out.push_back(static_cast<size_t>(k));
  } else {
    std::int64_t b = norm(start, n - 1, -1, n - 1), e = norm(stop, -1, -1, n - 1);
    for (std::int64_t k = b; k > e; k += step) out.push_back(static_cast<size_t>(k));
  }
  return out;
}

class Renderer {
 public:
  explicit Renderer(const RenderContext& ctx) : ctx_(ctx) {
    scopes_.emplace_back();
    for (const auto& [k, v] : ctx.globals) scopes_.back()[k] = v;
  }

  Text run(const Body& body, const std::set<std::string>& own_names) {
    // The template's own variables hide the caller's of the same name until they are set.
    for (const std::string& name : own_names) scopes_[0][name] = Value::undefined();
    exec_body(body);
    return std::move(out_);
  }

 private:
  using Scope = std::map<std::string, Value>;

  Flow exec_body(const Body& body) {
    for (const auto& s : body) {
      Flow f = exec(*s);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  // Statements and expressions nest as deep as the parser allows (250 levels), and macros call
  // each other; each level is a few C++ frames, so the renderer bounds the total nesting, and a
  // hostile template is an error, not a stack overflow.
  class NestingGuard {
   public:
    NestingGuard(int& depth, int line) : depth_(depth) {
      if (++depth_ > kMaxNesting)
        fail_unsupported(line, "templates nested deeper than " + std::to_string(kMaxNesting) +
                                   " levels while rendering");
    }
    ~NestingGuard() { --depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    int& depth_;
  };

  Flow exec(const Stmt& s) {
    NestingGuard guard(nesting_, s.line);
    switch (s.kind) {
      case Stmt::Kind::kText:
        out_.append_template(s.text);
        return Flow::kNormal;
      case Stmt::Kind::kOutput:
        out_.append(to_text(eval(*s.expr)));
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond).truthy()) return exec_body(body);
        }
        return exec_body(s.else_body);
      case Stmt::Kind::kFor:
        return exec_for(s);
      case Stmt::Kind::kSet:
        exec_set(s);
        return Flow::kNormal;
      case Stmt::Kind::kBreak:
        if (loop_depth_ == 0) fail_syntax(s.line, "'break' outside a for loop");
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        if (loop_depth_ == 0) fail_syntax(s.line, "'continue' outside a for loop");
        return Flow::kContinue;
      case Stmt::Kind::kMacro: {
        Value m;
        m.kind = Value::Kind::kCallable;
        m.str = Text::from_template(s.targets[0]);
        m.macro = &s;
        scopes_.back()[s.targets[0]] = std::move(m);
        return Flow::kNormal;
      }
    }
    return Flow::kNormal;
  }

  void exec_set(const Stmt& s) {
    Value v = eval(*s.expr);
    if (s.attr.empty()) {
      scopes_.back()[s.targets[0]] = std::move(v);
      return;
    }
    Value ns = lookup(s.targets[0]);
    if (ns.kind != Value::Kind::kNamespace) {
      fail_render(s.line, "cannot assign attribute '" + s.attr + "' on '" + s.targets[0] +
                              "': not a namespace");
    }
    for (auto& kv : *ns.object) {
      if (kv.first == s.attr) {
        kv.second = std::move(v);
        return;
      }
    }
    ns.object->emplace_back(s.attr, std::move(v));
  }

  Flow exec_for(const Stmt& s) {
    std::vector<Value> items = iterate(eval(*s.expr), s.line);
    if (s.filter) {
      std::vector<Value> kept;
      for (auto& item : items) {
        scopes_.emplace_back();
        bind_targets(s, item);
        if (eval(*s.filter).truthy()) kept.push_back(item);
        scopes_.pop_back();
      }
      items = std::move(kept);
    }
    if (items.empty()) {  // jinja2 gives the else branch a scope of its own
      scopes_.emplace_back();
      Flow f = exec_body(s.else_body);
      scopes_.pop_back();
      return f;
    }
    const auto n = static_cast<std::int64_t>(items.size());
    ++loop_depth_;
    for (std::int64_t k = 0; k < n; ++k) {
      scopes_.emplace_back();
      Object loop = {{"index0", Value::integer(k)},
                     {"index", Value::integer(k + 1)},
                     {"revindex0", Value::integer(n - k - 1)},
                     {"revindex", Value::integer(n - k)},
                     {"first", Value::boolean(k == 0)},
                     {"last", Value::boolean(k == n - 1)},
                     {"length", Value::integer(n)}};
      if (k > 0) loop.emplace_back("previtem", items[static_cast<size_t>(k - 1)]);
      if (k + 1 < n) loop.emplace_back("nextitem", items[static_cast<size_t>(k + 1)]);
      scopes_.back()["loop"] = Value::dict(std::move(loop));
      bind_targets(s, items[static_cast<size_t>(k)]);
      Flow f = exec_body(s.body);
      scopes_.pop_back();
      if (f == Flow::kBreak) break;
    }
    --loop_depth_;
    return Flow::kNormal;
  }

  void bind_targets(const Stmt& s, const Value& item) {
    if (s.targets.size() == 1) {
      scopes_.back()[s.targets[0]] = item;
      return;
    }
    std::vector<Value> parts = iterate(item, s.line);
    if (parts.size() != s.targets.size()) {
      fail_render(s.line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                              std::to_string(s.targets.size()) + " loop variables");
    }
    for (size_t k = 0; k < parts.size(); ++k) scopes_.back()[s.targets[k]] = parts[k];
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    if (is_known_function(name)) {
      Value f;
      f.kind = Value::Kind::kCallable;
      f.str = Text::from_template(name);
      return f;
    }
    return Value::undefined();
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs call;
    call.line = e.line;
    for (const auto& a : e.args) call.args.push_back(eval(*a));
    for (const auto& [k, a] : e.kwargs) call.kwargs.emplace_back(k, eval(*a));
    return call;
  }

  Value eval(const Expr& e) {
    NestingGuard guard(nesting_, e.line);
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList: {
        Array items;
        for (const auto& c : e.children) items.push_back(eval(*c));
        Value v = Value::list(std::move(items));
        v.tuple = e.name == "tuple";
        return v;
      }
      case Expr::Kind::kDict: {
        Object items;
        for (size_t k = 0; k + 1 < e.children.size(); k += 2) {
          Value key = eval(*e.children[k]);
          if (!key.is_string()) fail_unsupported(e.line, "dict literal with a non-string key");
          items.emplace_back(key.str.bytes, eval(*e.children[k + 1]));
        }
        return Value::dict(std::move(items));
      }
      case Expr::Kind::kAttr:
        return get_attr(eval(*e.children[0]), e.name, e);
      case Expr::Kind::kIndex:
        return get_item(eval(*e.children[0]), eval(*e.children[1]), e);
      case Expr::Kind::kSlice:
        return eval_slice(e);
      case Expr::Kind::kCall:
        return eval_call(e);
      case Expr::Kind::kFilter:
        return apply_filter(e.name, eval(*e.children[0]), eval_args(e));
      case Expr::Kind::kTest: {
        bool r = apply_test(e.name, eval(*e.children[0]), eval_args(e));
        return Value::boolean(r != e.negated);
      }
      case Expr::Kind::kNot:
        return Value::boolean(!eval(*e.children[0]).truthy());
      case Expr::Kind::kNegate: {
        Value v = eval(*e.children[0]);
        if (v.kind == Value::Kind::kInt) return Value::integer(-v.i);
        if (v.kind == Value::Kind::kFloat) return Value::floating(-v.f);
        if (v.kind == Value::Kind::kBool) return Value::integer(-std::int64_t{v.b});
        fail_render(e.line,
                    std::string("bad operand type for unary -: '") + kind_name(v.kind) + "'");
      }
      case Expr::Kind::kBinary:
        return eval_binary(e);
      case Expr::Kind::kCondition:
        if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
        return e.children[2] ? eval(*e.children[2]) : Value::undefined();
    }
    return Value::undefined();
  }

  [[noreturn]] static void fail_undefined(const Expr& e, const std::string& what) {
    fail_render(e.line, what + " of an undefined value");
  }

  Value get_attr(const Value& obj, const std::string& name, const Expr& e) {
    if (obj.is_undefined()) fail_undefined(e, "attribute '" + name + "'");
    if (obj.kind == Value::Kind::kCallable)  // jinja2's macro.name, .arguments, ...: not modelled
      fail_unsupported(e.line, "attribute '." + name + "' of a function or macro");
    if (const Value* v = obj.find(name)) return *v;
    return Value::undefined();
  }

  Value get_item(const Value& obj, const Value& key, const Expr& e) {
    if (obj.is_undefined()) fail_undefined(e, "item [" + to_repr(key).bytes + "]");
    if (obj.kind == Value::Kind::kObject || obj.kind == Value::Kind::kNamespace) {
      if (!key.is_string()) return Value::undefined();
      const Value* v = obj.find(key.str.bytes);
      return v ? *v : Value::undefined();
    }
    if ((obj.kind == Value::Kind::kArray || obj.is_string()) &&
        (key.kind == Value::Kind::kInt || key.kind == Value::Kind::kBool)) {
      std::int64_t n = python_len(obj, e.line);
      std::int64_t k = key.kind == Value::Kind::kBool ? key.b : key.i;
      if (k < 0) k += n;
      if (k < 0 || k >= n) return Value::undefined();
      if (obj.kind == Value::Kind::kArray) return (*obj.array)[static_cast<size_t>(k)];
      std::vector<size_t> cp = code_point_offsets(obj.str.bytes);
      return Value::string(obj.str.substr(
          cp[static_cast<size_t>(k)], cp[static_cast<size_t>(k) + 1] - cp[static_cast<size_t>(k)]));
    }
    return Value::undefined();
  }

  Value eval_slice(const Expr& e) {
    Value obj = eval(*e.children[0]);
    if (obj.is_undefined()) fail_undefined(e, "a slice");
    auto bound = [&](const ExprPtr& p) -> std::optional<std::int64_t> {
      if (!p) return std::nullopt;
      Value v = eval(*p);
      if (v.is_none()) return std::nullopt;
      if (v.kind != Value::Kind::kInt)
        fail_render(e.line, "slice indices must be integers or None");
      return v.i;
    };
    std::optional<std::int64_t> start = bound(e.children[1]), stop = bound(e.children[2]),
                                step = bound(e.children[3]);
    if (step && *step == 0) fail_render(e.line, "slice step cannot be zero");
    std::int64_t n = python_len(obj, e.line);
    std::vector<size_t> idx = slice_indices(n, start, stop, step.value_or(1));
    if (obj.kind == Value::Kind::kArray) {
      Array items;
      for (size_t k : idx) items.push_back((*obj.array)[k]);
      Value v = Value::list(std::move(items));
      v.tuple = obj.tuple;
      return v;
    }
    if (obj.is_string()) {
      std::vector<size_t> cp = code_point_offsets(obj.str.bytes);
      Text out;
      for (size_t k : idx) out.append(obj.str.substr(cp[k], cp[k + 1] - cp[k]));
      return Value::string(out);
    }
    fail_render(e.line, std::string("'") + kind_name(obj.kind) + "' object is not subscriptable");
  }

  Value eval_call(const Expr& e) {
    const Expr& callee = *e.children[0];
    if (callee.kind == Expr::Kind::kAttr) {
      Value obj = eval(*callee.children[0]);
      return call_method(obj, callee.name, eval_args(e));
    }
    Value f = eval(callee);
    if (f.is_undefined()) fail_render(e.line, "'" + callee.name + "' is undefined");
    if (f.kind != Value::Kind::kCallable)
      fail_render(e.line, "'" + callee.name + "' is not callable");
    CallArgs call = eval_args(e);
    if (f.macro) return call_macro(*f.macro, call);
    const std::string& name = f.str.bytes;
    if (name == "namespace") {
      Object attrs;
      if (!call.args.empty()) fail_unsupported(e.line, "'namespace()' with positional arguments");
      for (auto& [k, v] : call.kwargs) attrs.emplace_back(k, v);
      return Value::new_namespace(std::move(attrs));
    }
    if (name == "raise_exception") {
      const Value* msg = call.get(0, "message");
      throw TemplateError{
          StatusCode::kInvalidInput,
          "the template raised an exception: " + (msg ? to_text(*msg).bytes : std::string()),
          e.line};
    }
    if (name == "strftime_now") {
      const Value* fmt = call.get(0, "format");
      if (!fmt || !fmt->is_string()) fail_render(e.line, "strftime_now() needs a format string");
      if (!ctx_.now_unix_seconds) {
        fail_render(e.line,
                    "strftime_now() needs the run's pinned time (RenderOptions::now_unix_seconds)");
      }
      std::time_t t = static_cast<std::time_t>(*ctx_.now_unix_seconds);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[256];
      size_t n = std::strftime(buf, sizeof(buf), fmt->str.bytes.c_str(), &tm);
      return Value::template_string(std::string(buf, n));
    }
    fail_unsupported(e.line, "function '" + name + "()'");
  }

  // A macro's call: its body renders into a text of its own, which is the call's value. The body
  // sees the template's top-level variables as they are now, and its arguments; not the
  // caller's loop variables (jinja2's scoping). Arguments left out are Undefined unless the
  // parameter has a default, evaluated here, after the parameters before it.
  Value call_macro(const Stmt& macro, const CallArgs& call) {
    const std::string& name = macro.targets[0];
    if (call.args.size() > macro.params.size()) {
      fail_render(call.line, "macro '" + name + "' takes not more than " +
                                 std::to_string(macro.params.size()) + " argument(s)");
    }
    for (const auto& [key, v] : call.kwargs) {
      bool known = false;
      for (size_t k = call.args.size(); k < macro.params.size(); ++k)
        known |= macro.params[k].first == key;
      if (!known)
        fail_render(call.line, "macro '" + name + "' takes no keyword argument '" + key + "'");
    }
    if (macro_depth_ >= kMaxMacroDepth) {
      fail_unsupported(call.line,
                       "macro calls nested deeper than " + std::to_string(kMaxMacroDepth));
    }
    std::vector<Scope> outer(std::make_move_iterator(scopes_.begin() + 1),
                             std::make_move_iterator(scopes_.end()));
    scopes_.resize(1);
    scopes_.emplace_back();
    Text outer_out = std::move(out_);
    out_ = Text();
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;
    ++macro_depth_;
    // Every parameter is bound (Undefined where not given) before any default is evaluated, so
    // a default that names another parameter sees that argument, or Undefined, as in jinja2.
    std::vector<bool> given(macro.params.size());
    for (size_t k = 0; k < macro.params.size(); ++k) {
      const Value* v = call.get(k, macro.params[k].first.c_str());
      given[k] = v != nullptr;
      scopes_.back()[macro.params[k].first] = v ? *v : Value::undefined();
    }
    for (size_t k = 0; k < macro.params.size(); ++k) {
      const auto& [param, dflt] = macro.params[k];
      if (!given[k] && dflt) scopes_.back()[param] = eval(*dflt);
    }
    exec_body(macro.body);
    --macro_depth_;
    loop_depth_ = outer_loops;
    Text result = std::move(out_);
    out_ = std::move(outer_out);
    scopes_.resize(1);
    for (auto& scope : outer) scopes_.push_back(std::move(scope));
    return Value::string(std::move(result));
  }

  static double as_double(const Value& v) {
    return v.kind == Value::Kind::kFloat
               ? v.f
               : static_cast<double>(v.kind == Value::Kind::kBool ? v.b : v.i);
  }
  static std::int64_t as_int(const Value& v) { return v.kind == Value::Kind::kBool ? v.b : v.i; }

  [[noreturn]] static void fail_operands(const Expr& e, const Value& a, const Value& b) {
    fail_render(e.line, "unsupported operand types for " + e.name + ": '" + kind_name(a.kind) +
                            "' and '" + kind_name(b.kind) + "'");
  }

  bool contains(const Value& container, const Value& item, const Expr& e) {
    switch (container.kind) {
      case Value::Kind::kString:
        if (!item.is_string()) fail_render(e.line, "'in <string>' requires a string on the left");
        return container.str.bytes.find(item.str.bytes) != std::string::npos;
      case Value::Kind::kArray:
        for (const auto& x : *container.array) {
          if (values_equal(x, item)) return true;
        }
        return false;
      case Value::Kind::kObject:
        return item.is_string() && container.find(item.str.bytes) != nullptr;
      case Value::Kind::kUndefined:
        return false;
      default:
        fail_render(e.line, std::string("argument of type '") + kind_name(container.kind) +
                                "' is not iterable");
    }
  }

  Value eval_binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.children[0]);
      return a.truthy() ? eval(*e.children[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*e.children[0]);
      return a.truthy() ? a : eval(*e.children[1]);
    }
    Value a = eval(*e.children[0]);
    Value b = eval(*e.children[1]);
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "in") return Value::boolean(contains(b, a, e));
    if (op == "not in") return Value::boolean(!contains(b, a, e));
    if (op == "~") {
      Text t = to_text(a);
      t.append(to_text(b));
      return Value::string(t);
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int cmp;
      if (a.is_number() && b.is_number()) {
        double x = as_double(a), y = as_double(b);
        cmp = x < y ? -1 : (x > y ? 1 : 0);
      } else if (a.is_string() && b.is_string()) {
        cmp = a.str.bytes.compare(b.str.bytes);
      } else {
        fail_render(e.line, "'" + op + "' not supported between '" + kind_name(a.kind) + "' and '" +
                                kind_name(b.kind) + "'");
      }
      if (op == "<") return Value::boolean(cmp < 0);
      if (op == ">") return Value::boolean(cmp > 0);
      if (op == "<=") return Value::boolean(cmp <= 0);
      return Value::boolean(cmp >= 0);
    }
    if (a.is_undefined() || b.is_undefined())
      fail_render(e.line, "'" + op + "' on an undefined value");
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        Text t = a.str;
        t.append(b.str);
        return Value::string(t);
      }
      if (a.kind == Value::Kind::kArray && b.kind == Value::Kind::kArray && a.tuple != b.tuple) {
        const std::string x = a.tuple ? "tuple" : "list", y = b.tuple ? "tuple" : "list";
        fail_render(e.line, "can only concatenate " + x + " (not \"" + y + "\") to " + x);
      }
      if (a.kind == Value::Kind::kArray && b.kind == Value::Kind::kArray) {
        Array items = *a.array;
        items.insert(items.end(), b.array->begin(), b.array->end());
        Value v = Value::list(std::move(items));
        v.tuple = a.tuple;
        return v;
      }
    }
    if (!a.is_number() || !b.is_number()) fail_operands(e, a, b);
    bool floats = a.kind == Value::Kind::kFloat || b.kind == Value::Kind::kFloat;
    if (floats) {
      if (op == "+") return Value::floating(as_double(a) + as_double(b));
      if (op == "-") return Value::floating(as_double(a) - as_double(b));
      if (op == "*") return Value::floating(as_double(a) * as_double(b));
    }
    // Python's ints do not overflow; LEAP's are 64-bit, so an overflow is refused, not wrapped.
    std::int64_t r = 0;
    if ((op == "+" && __builtin_add_overflow(as_int(a), as_int(b), &r)) ||
        (op == "-" && __builtin_sub_overflow(as_int(a), as_int(b), &r)) ||
        (op == "*" && __builtin_mul_overflow(as_int(a), as_int(b), &r))) {
      fail_unsupported(e.line, "integer arithmetic beyond 64 bits");
    }
    if (op == "+" || op == "-" || op == "*") return Value::integer(r);
    if (op == "/") {
      if (as_double(b) == 0.0) fail_render(e.line, "division by zero");
      return Value::floating(as_double(a) / as_double(b));
    }
    if (op == "//" || op == "%") {
      if (floats) fail_unsupported(e.line, "'" + op + "' on floats");
      std::int64_t x = as_int(a), y = as_int(b);
      if (y == 0) fail_render(e.line, "integer division or modulo by zero");
      // The one quotient past 64 bits, which the CPU traps on (SIGFPE) instead of wrapping.
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) {
        if (op == "%") return Value::integer(0);
        fail_unsupported(e.line, "integer arithmetic beyond 64 bits");
      }
      std::int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {  // Python floors
        q -= 1;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    if (op == "**") {
      if (floats || as_int(b) < 0) return Value::floating(std::pow(as_double(a), as_double(b)));
      std::int64_t result = 1, base = as_int(a);
      for (std::int64_t exp = as_int(b); exp > 0; exp >>= 1) {
        bool overflow = (exp & 1) && __builtin_mul_overflow(result, base, &result);
        overflow = overflow || (exp > 1 && __builtin_mul_overflow(base, base, &base));
        if (overflow) fail_unsupported(e.line, "integer arithmetic beyond 64 bits");
      }
      return Value::integer(result);
    }
    fail_operands(e, a, b);
  }

  // Bound a macro's recursion and all nesting (NestingGuard): jinja2 stops at Python's recursion
  // limit (1000 frames, several per template level), so real templates stay far below both.
  static constexpr int kMaxMacroDepth = 100;
  static constexpr int kMaxNesting = 1000;

  const RenderContext& ctx_;
  std::vector<Scope> scopes_;
  int loop_depth_ = 0;
  int macro_depth_ = 0;
  int nesting_ = 0;
  Text out_;
};

}  // namespace

Text render_template(const Body& body, const std::set<std::string>& own_names,
                     const RenderContext& context) {
  return Renderer(context).run(body, own_names);
}

}  // namespace leap::chat
