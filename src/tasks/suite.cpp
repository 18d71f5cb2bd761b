// JSONL suite loader and validator (suite.h). Two layers, so tasks built in code get the same
// checks as tasks read from files: the loader checks the JSON shape of a line (types, required
// and unknown fields) and converts it; validate_task checks meaning (names, sizes under both
// parameter sets, inits against dtypes, the reference's form). Messages are written for the
// person editing the file: where, which field, what is wrong, what to write instead.
#include "tasks/suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fs_util.h"
#include "tasks/expr.h"
#include "tasks/inputs.h"

namespace leap::tasks {
namespace {

using json = nlohmann::json;

// Size limits: a suite must not be able to ask the sandbox for absurd allocations. The CPU
// bound is for the PTX interpreter, which visits every element many times.
constexpr int64_t kMaxGpuBufferBytes = int64_t{8} << 30;
constexpr int64_t kMaxCpuBufferElements = int64_t{1} << 22;

const std::vector<std::string> kTaskFields = {"id",     "level",      "family",  "prompt",
                                              "params", "cpu_params", "buffers", "reference",
                                              "atol",   "rtol",       "split",   "seen_in_train"};
const std::vector<std::string> kBufferFields = {"name", "dtype", "shape", "role", "init"};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Status field_error(const std::string& field, const std::string& msg) {
  return invalid_input(fmt::format("field '{}': {}", field, msg));
}

// Parses a full string as a finite double ("-1", "0.5", "1e-3").
bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool is_float_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

// The range of integers a dtype holds exactly; randint bounds must lie inside it.
std::pair<double, double> exact_int_range(DType t) {
  switch (t) {
    case DType::kU8:
      return {0, 255};
    case DType::kI32:
      return {-2147483648.0, 2147483647.0};
    case DType::kI64:
      return {-9007199254740992.0, 9007199254740992.0};  // exact as double
    case DType::kF16:
      return {-2048, 2048};
    case DType::kBF16:
      return {-256, 256};
    case DType::kF32:
      return {-16777216.0, 16777216.0};
  }
  return {0, 0};
}

// The body of the last ```cuda block, or npos-style failure as an empty optional.
bool last_cuda_block(const std::string& text, std::string* body) {
  const std::string fence = "```cuda";
  size_t start = text.rfind(fence);
  if (start == std::string::npos) return false;
  size_t body_start = text.find('\n', start);
  if (body_start == std::string::npos) return false;
  size_t end = text.find("```", body_start);
  if (end == std::string::npos) return false;
  *body = text.substr(body_start + 1, end - body_start - 1);
  return true;
}

Status check_params_match(const Task& t) {
  for (const auto& [name, value] : t.params) {
    if (!is_identifier(name) || name == "cdiv" || name == "min" || name == "max")
      return field_error("params." + name,
                         "a parameter name must be an identifier other than cdiv, min and max");
    auto it = t.cpu_params.find(name);
    if (it == t.cpu_params.end())
      return field_error("cpu_params",
                         fmt::format("'{}' is in params but not in cpu_params: give both the same "
                                     "names (cpu_params holds the interpreter's small sizes)",
                                     name));
    if (it->second.index() != value.index())
      return field_error("cpu_params." + name,
                         "params and cpu_params must agree on integer vs float: write "
                         "both as integers (sizes) or both with a decimal point (scalars)");
  }
  for (const auto& [name, value] : t.cpu_params) {
    if (!t.params.count(name))
      return field_error(
          "params",
          fmt::format("'{}' is in cpu_params but not in params: give both the same names", name));
  }
  return Status::ok();
}

Status check_init(const BufferSpec& b, const std::string& field) {
  using K = Init::Kind;
  if (b.role == Role::kOut) return Status::ok();
  const Init& in = b.init;
  if ((in.kind == K::kNormal || in.kind == K::kUniform) && !is_float_dtype(b.dtype))
    return field_error(
        field, fmt::format("{} needs a float dtype but the buffer is {}: use randint(a,b), zeros "
                           "or ones",
                           init_name(in), dtype_name(b.dtype)));
  if (in.kind == K::kUniform && !(std::isfinite(in.a) && std::isfinite(in.b) && in.a < in.b))
    return field_error(field,
                       fmt::format("uniform(a,b) needs finite a < b, got {}", init_name(in)));
  // Past f16's largest finite value the inputs round to infinity, and the reference computes
  // on infinities (bf16 and f32 reach far beyond any bound written in a suite).
  constexpr double kF16Max = 65504.0;
  if (in.kind == K::kUniform && b.dtype == DType::kF16 && std::max(std::fabs(in.a), std::fabs(in.b)) > kF16Max)
    return field_error(field, fmt::format("{} reaches past f16's largest value {}: keep the bounds within it",
                                          init_name(in), kF16Max));
  if (in.kind == K::kRandint) {
    if (in.a != std::floor(in.a) || in.b != std::floor(in.b) || in.a > in.b)
      return field_error(field,
                         fmt::format("randint(a,b) needs integers a <= b (both inclusive), got {}",
                                     init_name(in)));
    auto [lo, hi] = exact_int_range(b.dtype);
    if (in.a < lo || in.b > hi)
      return field_error(field,
                         fmt::format("{} does not fit {} exactly: keep the bounds within [{}, {}]",
                                     init_name(in), dtype_name(b.dtype), lo, hi));
  }
  return Status::ok();
}

Status check_buffer_sizes(const BufferSpec& b, const Task& t, const std::string& field) {
  for (size_t d = 0; d < b.shape.size(); ++d) {
    for (const auto* set : {&t.params, &t.cpu_params}) {
      const char* set_name = set == &t.params ? "params" : "cpu_params";
      auto v = eval_int_expr(b.shape[d], *set);
      if (!v)
        return field_error(fmt::format("{}.shape[{}]", field, d),
                           fmt::format("under {}: {}", set_name, v.status().message()));
      if (*v <= 0)
        return field_error(fmt::format("{}.shape[{}]", field, d),
                           fmt::format("'{}' is {} under {}: every dimension must be positive",
                                       b.shape[d], *v, set_name));
    }
  }
  auto gpu = buffer_elements(b, t.params);
  if (!gpu) return field_error(field + ".shape", "under params: " + gpu.status().message());
  if (*gpu > kMaxGpuBufferBytes / static_cast<int64_t>(dtype_size(b.dtype)))
    return field_error(field + ".shape",
                       fmt::format("{} elements under params exceed the {} GiB limit of a buffer",
                                   *gpu, kMaxGpuBufferBytes >> 30));
  auto cpu = buffer_elements(b, t.cpu_params);
  if (!cpu) return field_error(field + ".shape", "under cpu_params: " + cpu.status().message());
  if (*cpu > kMaxCpuBufferElements)
    return field_error(
        field + ".shape",
        fmt::format("{} elements under cpu_params exceed the interpreter's limit of {}: make "
                    "cpu_params smaller",
                    *cpu, kMaxCpuBufferElements));
  return Status::ok();
}

Status check_reference(const std::string& ref) {
  std::string body;
  if (!last_cuda_block(ref, &body))
    return field_error("reference",
                       "no ```cuda block: the reference must be an answer in the answer format, "
                       "a fenced ```cuda block closed by ```");
  bool has_launch = false;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t nl = body.find('\n', pos);
    std::string line = trim(
        std::string_view(body).substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (line.rfind("// launch:", 0) == 0) has_launch = true;
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  if (!has_launch)
    return field_error("reference",
                       "the ```cuda block has no '// launch: NAME<<<GRID, BLOCK>>>(ARGS)' line");
  return Status::ok();
}

// --- JSON shape
// ------------------------------------------------------------------------------------

class LineReader {
 public:
  explicit LineReader(const json& j) : j_(j) {}

  Status check_fields(const json& obj, const std::vector<std::string>& allowed,
                      const std::string& where) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
        std::string best;
        size_t best_d = std::numeric_limits<size_t>::max();
        for (const auto& a : allowed) {
          size_t d = edit_distance(it.key(), a);
          if (d < best_d) best_d = d, best = a;
        }
        return field_error(
            where + it.key(),
            fmt::format("unknown field; did you mean '{}'? (allowed: {})", best, join(allowed)));
      }
    }
    return Status::ok();
  }

  Expected<std::string> get_string(const json& obj, const std::string& key,
                                   const std::string& field) const {
    if (!obj.contains(key)) return field_error(field, "missing: add it as a string");
    const json& v = obj.at(key);
    if (!v.is_string())
      return field_error(field, fmt::format("must be a string, got {}", v.dump()));
    return v.get<std::string>();
  }

  Expected<double> get_number(const json& obj, const std::string& key,
                              const std::string& field) const {
    if (!obj.contains(key)) return field_error(field, "missing: add it as a number");
    const json& v = obj.at(key);
    if (!v.is_number())
      return field_error(field, fmt::format("must be a number, got {}", v.dump()));
    return v.get<double>();
  }

  Expected<Params> get_params(const std::string& key) const {
    if (!j_.contains(key))
      return field_error(key, "missing: add an object of parameters, e.g. {\"n\": 4099}");
    const json& obj = j_.at(key);
    if (!obj.is_object())
      return field_error(key, fmt::format("must be an object, got {}", obj.dump()));
    Params out;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string field = key + "." + it.key();
      const json& v = it.value();
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return field_error(field, "integer out of the int64 range");
      // Sizes reach the kernels (the reference's and the policy's) as 32-bit ints: a larger one
      // would fail only when the first job marshals it.
      if (v.is_number_integer() && (v.get<int64_t>() > std::numeric_limits<int32_t>::max() ||
                                    v.get<int64_t>() < std::numeric_limits<int32_t>::min()))
        return field_error(field, fmt::format("{} does not fit a 32-bit int, which kernels take sizes as", v.dump()));
      if (v.is_number_integer())
        out[it.key()] = v.get<int64_t>();
      else if (v.is_number_float())
        out[it.key()] = v.get<double>();
      else
        return field_error(
            field,
            fmt::format("must be an integer (a size) or a float (a scalar), got {}", v.dump()));
    }
    return out;
  }

  Expected<BufferSpec> get_buffer(const json& jb, size_t index) const {
    const std::string where = fmt::format("buffers[{}]", index);
    if (!jb.is_object())
      return field_error(where,
                         "must be an object {\"name\", \"dtype\", \"shape\", \"role\", \"init\"}");
    LEAP_RETURN_IF_ERROR(check_fields(jb, kBufferFields, where + "."));
    BufferSpec b;
    LEAP_ASSIGN_OR_RETURN(b.name, get_string(jb, "name", where + ".name"));
    LEAP_ASSIGN_OR_RETURN(auto dtype, get_string(jb, "dtype", where + ".dtype"));
    auto dt = parse_dtype(dtype);
    if (!dt) return field_error(where + ".dtype", dt.status().message());
    b.dtype = *dt;
    LEAP_ASSIGN_OR_RETURN(auto role, get_string(jb, "role", where + ".role"));
    auto r = parse_role(role);
    if (!r) return field_error(where + ".role", r.status().message());
    b.role = *r;
    if (!jb.contains("shape"))
      return field_error(where + ".shape",
                         "missing: add a list of size expressions, e.g. [\"m\", \"k\"]");
    const json& shape = jb.at("shape");
    if (!shape.is_array() || shape.empty())
      return field_error(
          where + ".shape",
          fmt::format("must be a non-empty list of size expressions, got {}", shape.dump()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].is_string())
        b.shape.push_back(shape[d].get<std::string>());
      else if (shape[d].is_number_integer())
        b.shape.push_back(std::to_string(shape[d].get<int64_t>()));
      else
        return field_error(
            fmt::format("{}.shape[{}]", where, d),
            fmt::format("must be a string expression or an integer, got {}", shape[d].dump()));
    }
    if (b.role == Role::kOut) {
      if (jb.contains("init"))
        return field_error(where + ".init",
                           "an out buffer has no init (the sandbox poisons it before each launch): "
                           "remove it, or make the role inout");
    } else {
      LEAP_ASSIGN_OR_RETURN(auto init, get_string(jb, "init", where + ".init"));
      auto in = parse_init(init);
      if (!in) return field_error(where + ".init", in.status().message());
      b.init = *in;
    }
    return b;
  }

  Expected<Task> read() const {
    if (!j_.is_object()) return invalid_input("a line must be one JSON object (a task)");
    LEAP_RETURN_IF_ERROR(check_fields(j_, kTaskFields, ""));
    Task t;
    LEAP_ASSIGN_OR_RETURN(t.id, get_string(j_, "id", "id"));
    if (!j_.contains("level") || !j_.at("level").is_number_integer())
      return field_error("level",
                         "must be an integer (1: single operations, 2: fused operations, ...)");
    int64_t level = j_.at("level").get<int64_t>();
    if (level < 1 || level > 100)
      return field_error("level", fmt::format("must be between 1 and 100, got {}", level));
    t.level = static_cast<int>(level);
    LEAP_ASSIGN_OR_RETURN(t.family, get_string(j_, "family", "family"));
    LEAP_ASSIGN_OR_RETURN(t.prompt, get_string(j_, "prompt", "prompt"));
    LEAP_ASSIGN_OR_RETURN(t.params, get_params("params"));
    LEAP_ASSIGN_OR_RETURN(t.cpu_params, get_params("cpu_params"));
    if (!j_.contains("buffers") || !j_.at("buffers").is_array() || j_.at("buffers").empty())
      return field_error("buffers", "must be a non-empty list of buffer objects");
    const json& jbufs = j_.at("buffers");
    for (size_t i = 0; i < jbufs.size(); ++i) {
      LEAP_ASSIGN_OR_RETURN(auto b, get_buffer(jbufs[i], i));
      t.buffers.push_back(std::move(b));
    }
    LEAP_ASSIGN_OR_RETURN(t.reference, get_string(j_, "reference", "reference"));
    LEAP_ASSIGN_OR_RETURN(t.atol, get_number(j_, "atol", "atol"));
    LEAP_ASSIGN_OR_RETURN(t.rtol, get_number(j_, "rtol", "rtol"));
    LEAP_ASSIGN_OR_RETURN(auto split, get_string(j_, "split", "split"));
    auto s = parse_split(split);
    if (!s) return field_error("split", s.status().message());
    t.split = *s;
    if (j_.contains("seen_in_train")) {
      const json& seen = j_.at("seen_in_train");
      const bool strings = seen.is_array() && !seen.empty() &&
                           std::all_of(seen.begin(), seen.end(), [](const json& x) {
                             return x.is_string() && !x.get<std::string>().empty();
                           });
      if (!strings)
        return field_error(
            "seen_in_train",
            "must be a non-empty list of reasons (strings); leave the field out for a task "
            "that is held out cleanly");
      if (t.split != Split::kHeldout)
        return field_error(
            "seen_in_train",
            "only a held-out task can be marked as seen in train; remove the field or set "
            "\"split\": \"heldout\"");
      for (const auto& x : seen) t.seen_in_train.push_back(x.get<std::string>());
    }
    return t;
  }

 private:
  const json& j_;
};

}  // namespace

// --- names
// ------------------------------------------------------------------------------------------

const char* split_name(Split s) {
  return s == Split::kTrain ? "train" : "heldout";
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kIn:
      return "in";
    case Role::kOut:
      return "out";
    case Role::kInOut:
      return "inout";
  }
  return "?";
}

std::string init_name(const Init& init) {
  switch (init.kind) {
    case Init::Kind::kNormal:
      return "normal";
    case Init::Kind::kUniform:
      return fmt::format("uniform({},{})", init.a, init.b);
    case Init::Kind::kRandint:
      return fmt::format("randint({},{})", init.a, init.b);
    case Init::Kind::kZeros:
      return "zeros";
    case Init::Kind::kOnes:
      return "ones";
  }
  return "?";
}

Expected<DType> parse_dtype(std::string_view text) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8})
    if (text == dtype_name(t)) return t;
  return invalid_input(
      fmt::format("unknown dtype '{}': use one of f32, f16, bf16, i32, i64, u8", text));
}

Expected<Role> parse_role(std::string_view text) {
  for (Role r : {Role::kIn, Role::kOut, Role::kInOut})
    if (text == role_name(r)) return r;
  return invalid_input(fmt::format("unknown role '{}': use one of in, out, inout", text));
}

Expected<Split> parse_split(std::string_view text) {
  if (text == "train") return Split::kTrain;
  if (text == "heldout") return Split::kHeldout;
  return invalid_input(fmt::format("unknown split '{}': use train or heldout", text));
}

Expected<Init> parse_init(std::string_view raw) {
  const std::string text = trim(raw);
  const auto bad = [&](const std::string& why) {
    return invalid_input(fmt::format(
        "bad init '{}': {}; use normal, uniform(a,b), randint(a,b), zeros or ones", text, why));
  };
  Init init;
  if (text == "normal")
    init.kind = Init::Kind::kNormal;
  else if (text == "zeros")
    init.kind = Init::Kind::kZeros;
  else if (text == "ones")
    init.kind = Init::Kind::kOnes;
  else {
    size_t open = text.find('(');
    if (open == std::string::npos || text.back() != ')') return bad("unknown init");
    std::string fn = trim(std::string_view(text).substr(0, open));
    if (fn == "uniform")
      init.kind = Init::Kind::kUniform;
    else if (fn == "randint")
      init.kind = Init::Kind::kRandint;
    else
      return bad(fmt::format("unknown init function '{}'", fn));
    std::string args = text.substr(open + 1, text.size() - open - 2);
    size_t comma = args.find(',');
    if (comma == std::string::npos || args.find(',', comma + 1) != std::string::npos)
      return bad(fn + " takes two numbers");
    if (!parse_number(trim(std::string_view(args).substr(0, comma)), &init.a) ||
        !parse_number(trim(std::string_view(args).substr(comma + 1)), &init.b))
      return bad(fn + " takes two finite numbers");
    if (init.kind == Init::Kind::kUniform && !(init.a < init.b))
      return bad("uniform(a,b) needs a < b");
    if (init.kind == Init::Kind::kRandint &&
        (init.a != std::floor(init.a) || init.b != std::floor(init.b) || init.a > init.b))
      return bad("randint(a,b) needs integers a <= b (both inclusive)");
  }
  return init;
}

// --- validation
// -------------------------------------------------------------------------------------

Status validate_task(const Task& t) {
  if (t.id.empty() || std::any_of(t.id.begin(), t.id.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c));
      }))
    return field_error(
        "id", fmt::format("'{}' must be non-empty and without spaces, e.g. \"L1/relu\"", t.id));
  if (t.level < 1) return field_error("level", "must be >= 1");
  if (trim(t.family).empty())
    return field_error("family", "must name the kind of task, e.g. \"elementwise\"");
  if (trim(t.prompt).empty()) return field_error("prompt", "must say what to compute");
  LEAP_RETURN_IF_ERROR(check_params_match(t));
  if (t.buffers.empty()) return field_error("buffers", "a task needs at least one buffer");
  std::set<std::string> names;
  bool writes = false;
  for (size_t i = 0; i < t.buffers.size(); ++i) {
    const BufferSpec& b = t.buffers[i];
    const std::string where = fmt::format("buffers[{}]", i);
    if (!is_identifier(b.name))
      return field_error(where + ".name", fmt::format("'{}' is not an identifier", b.name));
    if (!names.insert(b.name).second)
      return field_error(where + ".name",
                         fmt::format("'{}' names two buffers: names must be unique", b.name));
    if (t.params.count(b.name))
      return field_error(where + ".name",
                         fmt::format("'{}' is also a parameter: a launch argument must name one "
                                     "thing, rename one of them",
                                     b.name));
    if (b.shape.empty()) return field_error(where + ".shape", "must have at least one dimension");
    LEAP_RETURN_IF_ERROR(check_buffer_sizes(b, t, where));
    LEAP_RETURN_IF_ERROR(check_init(b, where + ".init"));
    writes = writes || b.role != Role::kIn;
  }
  if (!writes)
    return field_error("buffers",
                       "no buffer has role out or inout: the kernel must write something");
  LEAP_RETURN_IF_ERROR(check_reference(t.reference));
  if (!std::isfinite(t.atol) || t.atol < 0)
    return field_error("atol", fmt::format("must be >= 0, got {}", t.atol));
  if (!std::isfinite(t.rtol) || t.rtol < 0)
    return field_error("rtol", fmt::format("must be >= 0, got {}", t.rtol));
  return Status::ok();
}

// --- loading
// ----------------------------------------------------------------------------------------

Expected<Suite> parse_suite(std::string_view text, const std::string& source_name) {
  Suite suite;
  suite.path = source_name;
  std::map<std::string, int> id_line;
  size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (trim(line).empty()) continue;
    const std::string where = fmt::format("{}:{}", source_name, line_no);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e999
      return invalid_input(fmt::format(
          "{}: not valid JSON ({}): each line must be one complete JSON object", where, e.what()));
    }
    auto task = LineReader(j).read();
    std::string id_part;
    if (j.is_object() && j.contains("id") && j.at("id").is_string())
      id_part = fmt::format(" task '{}':", j.at("id").get<std::string>());
    if (!task)
      return invalid_input(fmt::format("{}:{} {}", where, id_part, task.status().message()));
    Status st = validate_task(*task);
    if (!st) return invalid_input(fmt::format("{}:{} {}", where, id_part, st.message()));
    auto [it, fresh] = id_line.emplace(task->id, line_no);
    if (!fresh)
      return invalid_input(
          fmt::format("{}: field 'id': '{}' is already the id of line {}: ids must be unique",
                      where, task->id, it->second));
    suite.tasks.push_back(std::move(task).value());
  }
  if (suite.tasks.empty())
    return invalid_input(
        fmt::format("{}: no tasks: a suite holds one JSON task object per line", source_name));
  return suite;
}

Expected<Suite> load_suite(const std::string& path) {
  auto text = read_file(path);
  if (!text)
    return Status(text.status().code(), text.status().message() + ": check the suite path");
  return parse_suite(*text, path);
}

const Task* Suite::find(std::string_view id) const {
  for (const auto& t : tasks)
    if (t.id == id) return &t;
  return nullptr;
}

Expected<const Task*> find_task(const Suite& suite, std::string_view id) {
  if (const Task* t = suite.find(id)) return t;
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& t : suite.tasks) {
    size_t d = edit_distance(std::string(id), t.id);
    if (d < best_d) best_d = d, best = t.id;
  }
  return not_found(fmt::format(
      "no task '{}' in suite '{}'; did you mean '{}'? (`leap tasks list {}` lists them)", id,
      suite.path, best, suite.path));
}

std::vector<const Task*> select_tasks(const Suite& suite, Split split) {
  std::vector<const Task*> out;
  for (const auto& t : suite.tasks)
    if (t.split == split) out.push_back(&t);
  return out;
}

std::vector<int> task_indices(const Suite& suite, Split split) {
  std::vector<int> out;
  for (size_t i = 0; i < suite.tasks.size(); ++i)
    if (suite.tasks[i].split == split) out.push_back(static_cast<int>(i));
  return out;
}

void TasksConfig::declare(OptionSet& opts) {
  opts.add("tasks.suite", &suite, std::string("tasks/level1.jsonl"),
           "Task suite (JSONL, one task a line): training draws its train split, evaluation "
           "reports both.",
           {.alias = "suite"});
}

}  // namespace leap::tasks
