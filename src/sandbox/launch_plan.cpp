// Launch-plan evaluation and its bounds. Expressions go through tasks::eval_int_expr, which
// reports overflow rather than wrapping, so every bound below compares true int64 values.
#include "sandbox/launch_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

#include "tasks/expr.h"

namespace leap::sandbox {

namespace {

using tasks::Params;

Expected<int64_t> eval_at(const std::string& expr, const Params& params, const char* what) {
  auto v = tasks::eval_int_expr(expr, params);
  if (!v) return invalid_input(fmt::format("{} '{}': {}", what, expr, v.status().message()));
  return *v;
}

// A float literal argument: "0.5", "1e-3f", "2.f". Integers stay integer expressions.
bool parse_float_literal(const std::string& text, double* out) {
  if (text.find_first_of(".eE") == std::string::npos) return false;
  std::string t = text;
  if (!t.empty() && (t.back() == 'f' || t.back() == 'F')) t.pop_back();
  if (t.empty() || (!std::isdigit(static_cast<unsigned char>(t[0])) && t[0] != '.' && t[0] != '-'))
    return false;
  char* end = nullptr;
  *out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

Status eval_dims(const std::vector<std::string>& exprs, const Params& params, const char* what,
                 const int64_t* max_dim, uint32_t out[3]) {
  static constexpr char kAxis[3] = {'x', 'y', 'z'};
  for (size_t i = 0; i < exprs.size(); ++i) {
    LEAP_ASSIGN_OR_RETURN(int64_t v, eval_at(exprs[i], params, what));
    if (v < 1 || v > max_dim[i])
      return invalid_input(fmt::format("{}.{} = {} (from '{}') is outside [1, {}]", what, kAxis[i],
                                       v, exprs[i], max_dim[i]));
    out[i] = static_cast<uint32_t>(v);
  }
  return Status::ok();
}

Expected<PlanArg> resolve_arg(const std::string& text, const tasks::Task& task,
                              const LaunchPlan& plan, const Params& params) {
  PlanArg arg;
  arg.text = text;
  for (size_t b = 0; b < task.buffers.size(); ++b) {
    if (task.buffers[b].name == text) {
      arg.kind = PlanArg::Kind::kBuffer;
      arg.index = static_cast<int>(b);
      return arg;
    }
  }
  for (size_t s = 0; s < plan.scratch.size(); ++s) {
    if (plan.scratch[s].name == text) {
      arg.kind = PlanArg::Kind::kScratch;
      arg.index = static_cast<int>(s);
      return arg;
    }
  }
  if (auto it = params.find(text);
      it != params.end() && std::holds_alternative<double>(it->second)) {
    arg.kind = PlanArg::Kind::kFloat;
    arg.float_value = std::get<double>(it->second);
    return arg;
  }
  if (parse_float_literal(text, &arg.float_value)) {
    arg.kind = PlanArg::Kind::kFloat;
    return arg;
  }
  auto v = tasks::eval_int_expr(text, params);
  if (!v)
    return invalid_input(fmt::format(
        "argument '{}' is not a buffer of the task, a scratch buffer, a float parameter or an "
        "integer expression ({})",
        text, v.status().message()));
  arg.kind = PlanArg::Kind::kInt;
  arg.int_value = *v;
  return arg;
}

Status plan_scratch(const Answer& answer, const tasks::Task& task, const Params& params,
                    const PlanLimits& limits, LaunchPlan* plan) {
  std::set<std::string> names;
  for (const auto& b : task.buffers) names.insert(b.name);
  for (const auto& [name, value] : params) names.insert(name);
  int64_t total = 0;
  for (const auto& s : answer.scratch) {
    auto ctx = fmt::format("line {}: scratch '{}'", s.line, s.name);
    if (!names.insert(s.name).second)
      return invalid_input(ctx +
                           ": the name is already a buffer, a parameter or another scratch buffer");
    auto count = eval_at(s.count, params, "count");
    if (!count) return count.status().with_context(ctx);
    const int64_t elem = static_cast<int64_t>(tasks::dtype_size(s.dtype));
    if (*count < 1 || *count > limits.max_scratch_bytes / elem ||
        total + *count * elem > limits.max_scratch_bytes)
      return invalid_input(
          fmt::format("{}: {} elements of {} exceed the scratch limit of {} bytes "
                      "in all (or are < 1)",
                      ctx, *count, tasks::dtype_name(s.dtype), limits.max_scratch_bytes));
    total += *count * elem;
    plan->scratch.push_back({s.name, s.dtype, *count, static_cast<size_t>(*count * elem)});
  }
  return Status::ok();
}

Expected<PlannedLaunch> plan_launch(const LaunchSpec& spec, const tasks::Task& task,
                                    const LaunchPlan& plan, const Params& params,
                                    const PlanLimits& limits) {
  PlannedLaunch out;
  out.line = spec.line;
  out.kernel = spec.kernel;
  LEAP_RETURN_IF_ERROR(eval_dims(spec.grid, params, "grid", limits.max_grid_dim, out.grid));
  LEAP_RETURN_IF_ERROR(eval_dims(spec.block, params, "block", limits.max_block_dim, out.block));
  const int64_t threads = int64_t{out.block[0]} * out.block[1] * out.block[2];
  if (threads > limits.max_threads_per_block)
    return invalid_input(
        fmt::format("a block of {}x{}x{} = {} threads exceeds {} threads per block", out.block[0],
                    out.block[1], out.block[2], threads, limits.max_threads_per_block));
  const __int128 blocks = static_cast<__int128>(out.grid[0]) * out.grid[1] * out.grid[2];
  if (blocks > limits.max_blocks_per_launch)
    return invalid_input(fmt::format("a grid of {}x{}x{} blocks exceeds {} blocks per launch",
                                     out.grid[0], out.grid[1], out.grid[2],
                                     limits.max_blocks_per_launch));
  if (!spec.shared_bytes.empty()) {
    LEAP_ASSIGN_OR_RETURN(int64_t smem, eval_at(spec.shared_bytes, params, "shared memory"));
    if (smem < 0 || smem > limits.max_dynamic_shared_bytes)
      return invalid_input(fmt::format("dynamic shared memory of {} bytes is outside [0, {}]", smem,
                                       limits.max_dynamic_shared_bytes));
    out.shared_bytes = static_cast<uint32_t>(smem);
  }
  for (const auto& a : spec.args) {
    LEAP_ASSIGN_OR_RETURN(PlanArg arg, resolve_arg(a, task, plan, params));
    out.args.push_back(std::move(arg));
  }
  return out;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether the `size` characters at `p` are a whole identifier, not part of a longer one.
bool whole_word_at(const std::string& code, size_t p, size_t size) {
  return (p == 0 || !is_ident(code[p - 1])) &&
         (p + size >= code.size() || !is_ident(code[p + size]));
}

// The identifier that ends just before `paren` (spaces between allowed), not reaching back
// past `from`; empty when there is none.
std::string name_before(const std::string& code, size_t from, size_t paren) {
  size_t end = paren;
  while (end > from && std::isspace(static_cast<unsigned char>(code[end - 1]))) --end;
  size_t begin = end;
  while (begin > from && is_ident(code[begin - 1])) --begin;
  return code.substr(begin, end - begin);
}

// The names the code gives its __global__ functions, in order, without repeats: the identifier
// before the first '(' after each `__global__`, passing over `__launch_bounds__(...)`. A plain
// scan, not a parse: it only has to name candidates in a message. A hostile answer reaches it
// too, so it stays linear in the code's length: the next '(' is searched once per stretch of
// code, and a '(' already read (many `__global__` before one name) is not read again.
std::vector<std::string> declared_kernels(const std::string& code) {
  static constexpr std::string_view kGlobal = "__global__";
  constexpr size_t npos = std::string::npos;
  std::vector<std::string> names;
  std::set<std::string> seen;
  size_t searched_from = npos, found = npos;  // the last search for '(' and what it found
  size_t read = npos;                         // the last '(' whose name was read
  for (size_t p = code.find(kGlobal); p != npos; p = code.find(kGlobal, p + 1)) {
    if (!whole_word_at(code, p, kGlobal.size())) continue;
    for (size_t from = p + kGlobal.size();;) {
      // The last search still answers when `from` lies between where it began and what it
      // found (npos at first, so the first search always runs; a search that finds none ends).
      if (from < searched_from || from > found) {
        searched_from = from;
        found = code.find('(', from);
      }
      const size_t paren = found;
      if (paren == npos) return names;  // no '(' left: no more names
      if (paren == read) break;
      read = paren;
      std::string name = name_before(code, from, paren);
      if (name == "__launch_bounds__") {
        from = code.find(')', paren);
        if (from == npos) return names;
        continue;
      }
      if (!name.empty() && seen.insert(name).second) names.push_back(std::move(name));
      break;
    }
  }
  return names;
}

// The names the code gives its __device__ functions (`__host__ __device__` ones too): the
// identifier before a '(' that follows a `__device__` with no ';', '{' or '=' between (those end
// a __device__ variable instead). Another plain scan, linear for the same reason as the one above:
// the `__device__` tokens that share one stop share one search.
std::set<std::string> device_functions(const std::string& code) {
  static constexpr std::string_view kDevice = "__device__";
  constexpr size_t npos = std::string::npos;
  std::set<std::string> names;
  size_t stop = npos, read = npos;  // the last stop found, and the last '(' whose name was read
  bool searched = false;
  for (size_t p = code.find(kDevice); p != npos; p = code.find(kDevice, p + 1)) {
    if (!whole_word_at(code, p, kDevice.size())) continue;
    const size_t from = p + kDevice.size();
    // Occurrences come in order, so a stop found from an earlier one still answers while this
    // one lies before it: nothing between can be a stop.
    if (!searched || from > stop) {
      stop = code.find_first_of("(;{=", from);
      searched = true;
    }
    if (stop == npos) break;
    if (code[stop] != '(' || stop == read) continue;
    read = stop;
    if (std::string name = name_before(code, from, stop); !name.empty())
      names.insert(std::move(name));
  }
  return names;
}

// What a launch line that names no kernel of the code may name instead: a tiny policy often
// spells the same name two ways, and the fix is to copy one of these.
std::string kernels_hint(const std::vector<std::string>& names) {
  static constexpr size_t kShown = 4;  // a hostile answer may declare thousands
  if (names.empty()) return "; it declares no __global__ function at all";
  std::string list;
  for (size_t i = 0; i < names.size() && i < kShown; ++i)
    list += fmt::format("{}'{}'", i == 0 ? "" : ", ", names[i]);
  if (names.size() > kShown) list += fmt::format(" and {} more", names.size() - kShown);
  return fmt::format("; it declares {}", list);
}

// Every launched kernel's name appears in the code. NVRTC would fail on an unknown name
// expression with an obscure pragma message; this says what is wrong in the policy's terms,
// and which names the code does declare.
Status check_kernels_named(const Answer& answer) {
  const std::string code = blank_comments_and_strings(answer.source);
  // Each scan runs at most once a plan; the kernels' list only for a name that is unknown or a
  // __device__ function's.
  std::optional<std::vector<std::string>> kernels;
  std::optional<std::set<std::string>> device;
  auto declared = [&]() -> const std::vector<std::string>& {
    if (!kernels) kernels = declared_kernels(code);
    return *kernels;
  };
  for (const auto& l : answer.launches) {
    std::string base = l.kernel.substr(0, l.kernel.find('<'));
    if (size_t sep = base.rfind("::"); sep != std::string::npos) base = base.substr(sep + 2);
    bool found = false;
    for (size_t p = code.find(base); p != std::string::npos && !found; p = code.find(base, p + 1))
      found = whole_word_at(code, p, base.size());
    if (!found)
      return invalid_input(
          fmt::format("line {}: the code defines no __global__ kernel '{}'{} (define it, "
                      "and spell it in the launch line as in the code)",
                      l.line, base, kernels_hint(declared())));
    // A name the code has, but as a __device__ function and never as a kernel: NVRTC would
    // reject its name expression with a message that does not say why.
    if (!device) device = device_functions(code);
    if (device->count(base) &&
        std::find(declared().begin(), declared().end(), base) == declared().end())
      return invalid_input(
          fmt::format("line {}: '{}' is a __device__ function, not a __global__ kernel{} (a "
                      "launch line starts a kernel: launch the __global__ kernel that calls it, "
                      "or declare it __global__ void)",
                      l.line, base, kernels_hint(declared())));
  }
  return Status::ok();
}

}  // namespace

Expected<LaunchPlan> make_launch_plan(const Answer& answer, const tasks::Task& task,
                                      const Params& params, const PlanLimits& limits) {
  LaunchPlan plan;
  if (static_cast<int>(answer.launches.size()) > limits.max_launches)
    return invalid_input(fmt::format("{} launch lines exceed the limit of {}",
                                     answer.launches.size(), limits.max_launches));
  LEAP_RETURN_IF_ERROR(check_kernels_named(answer));
  LEAP_RETURN_IF_ERROR(plan_scratch(answer, task, params, limits, &plan));
  for (const auto& spec : answer.launches) {
    auto launch = plan_launch(spec, task, plan, params, limits);
    if (!launch)
      return launch.status().with_context(
          fmt::format("line {}: launch of {}", spec.line, spec.kernel));
    plan.launches.push_back(std::move(*launch));
  }
  return plan;
}

}  // namespace leap::sandbox
