// compare_outputs: element-wise tolerance check over every output buffer, with a message that
// names what the policy needs to fix: which buffer, how many elements, where the first one is
// (flat and per-dimension), what was expected, and whether it was never written (NaN).
#include "sandbox/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tasks/dtype_convert.h"
#include "tasks/expr.h"

namespace leap::sandbox {

namespace {

// "[3, 17]" for a 2-D buffer, "" when the shape has one dimension (the flat index says it).
std::string multi_index(const tasks::BufferSpec* spec, const tasks::Params& params, size_t flat) {
  if (!spec || spec->shape.size() < 2) return "";
  std::vector<int64_t> dims;
  for (const auto& d : spec->shape) {
    auto v = tasks::eval_int_expr(d, params);
    if (!v || *v <= 0) return "";
    dims.push_back(*v);
  }
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = static_cast<int64_t>(flat % dims[k]);
    flat /= dims[k];
  }
  std::string out = " = [";
  for (size_t k = 0; k < idx.size(); ++k) out += fmt::format("{}{}", k ? ", " : "", idx[k]);
  return out + "]";
}

const tasks::BufferSpec* find_spec(const tasks::Task& task, const std::string& name) {
  for (const auto& b : task.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

// Calls f with a reader of `dtype` elements as double (tasks::read_element's values), a type of
// its own per dtype, so that the scan below is compiled per pair of dtypes with the loads inline
// (GPU-sized outputs have tens of millions of elements).
template <typename F>
void with_reader(tasks::DType dtype, F&& f) {
  switch (dtype) {
    case tasks::DType::kF32: return f([](const uint8_t* p, size_t i) { return static_cast<double>(tasks::load<float>(p, i)); });
    case tasks::DType::kF16:
      return f([](const uint8_t* p, size_t i) { return tasks::f16_bits_to_double(tasks::load<uint16_t>(p, i)); });
    case tasks::DType::kBF16:
      return f([](const uint8_t* p, size_t i) { return tasks::bf16_bits_to_double(tasks::load<uint16_t>(p, i)); });
    case tasks::DType::kI32: return f([](const uint8_t* p, size_t i) { return static_cast<double>(tasks::load<int32_t>(p, i)); });
    case tasks::DType::kI64: return f([](const uint8_t* p, size_t i) { return static_cast<double>(tasks::load<int64_t>(p, i)); });
    case tasks::DType::kU8: return f([](const uint8_t* p, size_t i) { return static_cast<double>(tasks::load<uint8_t>(p, i)); });
  }
}

struct Scan {
  size_t mismatches = 0, first = 0, unwritten = 0;
  double max_abs_err = 0;
  bool all_zero_cand = true, all_zero_ref = true;
};

// Every element of one output: the tolerance rule, the first mismatch, NaNs never written.
template <typename ReadC, typename ReadR>
void scan(const uint8_t* c, const uint8_t* r, size_t n, double atol, double rtol, ReadC read_c, ReadR read_r,
          Scan* s) {
  for (size_t i = 0; i < n; ++i) {
    const double cv = read_c(c, i);
    const double rv = read_r(r, i);
    s->all_zero_cand = s->all_zero_cand && std::fabs(cv) <= atol;
    s->all_zero_ref = s->all_zero_ref && std::fabs(rv) <= atol;
    double err;
    bool bad;
    if (std::isnan(rv)) {
      err = std::isnan(cv) ? 0.0 : std::numeric_limits<double>::infinity();
      bad = !std::isnan(cv);
    } else if (std::isnan(cv) || std::isinf(cv) || std::isinf(rv)) {
      bad = !(cv == rv);
      err = bad ? std::numeric_limits<double>::infinity() : 0.0;
      s->unwritten += std::isnan(cv);
    } else {
      err = std::fabs(cv - rv);
      bad = err > atol + rtol * std::fabs(rv);
    }
    s->max_abs_err = std::max(s->max_abs_err, err);
    if (bad && s->mismatches++ == 0) s->first = i;
  }
}
}  // namespace

Comparison compare_outputs(const tasks::Task& task, const tasks::Params& params,
                           const std::vector<tasks::BufferData>& candidate,
                           const std::vector<tasks::BufferData>& reference, bool show_values) {
  Comparison result;
  if (candidate.size() != reference.size()) {
    result.ok = false;
    result.message = "internal: output lists differ";
    return result;
  }
  // The candidate's buffers come from the worker's report: a buffer that does not have the
  // reference's length, or bytes for its length, is never read (and never passes).
  const auto holds = [](const tasks::BufferData& d) {
    return d.elements >= 0 && d.bytes.size() == static_cast<size_t>(d.elements) * tasks::dtype_size(d.dtype);
  };
  for (size_t b = 0; b < candidate.size(); ++b) {
    if (!holds(candidate[b]) || !holds(reference[b]) || candidate[b].elements != reference[b].elements) {
      result.ok = false;
      result.message = fmt::format("internal: output '{}' has {} elements where the reference has {}",
                                   candidate[b].name, candidate[b].elements, reference[b].elements);
      return result;
    }
    // Another dtype (one no dtype names: 0 bytes an element, so no bytes) would be read as the
    // reference's, or not at all.
    if (candidate[b].dtype != reference[b].dtype) {
      result.ok = false;
      result.message = fmt::format("internal: output '{}' is reported as dtype {} where the reference is {}",
                                   candidate[b].name, static_cast<int>(candidate[b].dtype),
                                   static_cast<int>(reference[b].dtype));
      return result;
    }
  }
  bool all_zero_cand = true, all_zero_ref = true;
  for (size_t b = 0; b < candidate.size(); ++b) {
    const auto& c = candidate[b];
    const auto& r = reference[b];
    const size_t n = static_cast<size_t>(c.elements);
    Scan s;
    s.max_abs_err = result.max_abs_err;
    s.all_zero_cand = all_zero_cand;
    s.all_zero_ref = all_zero_ref;
    with_reader(c.dtype, [&](auto read_c) {
      with_reader(r.dtype, [&](auto read_r) {
        scan(c.bytes.data(), r.bytes.data(), n, task.atol, task.rtol, read_c, read_r, &s);
      });
    });
    result.max_abs_err = s.max_abs_err;
    all_zero_cand = s.all_zero_cand;
    all_zero_ref = s.all_zero_ref;
    const size_t mismatches = s.mismatches, first = s.first, unwritten = s.unwritten;
    if (mismatches && result.ok) {
      result.ok = false;
      const double cv = tasks::read_element(c.bytes.data(), c.dtype, first);
      const double rv = tasks::read_element(r.bytes.data(), r.dtype, first);
      result.message = fmt::format("wrong output in '{}': {} of {} elements differ; first at index {}{}", c.name,
                                   mismatches, n, first, multi_index(find_spec(task, c.name), params, first));
      result.message += show_values ? fmt::format(": got {}, expected {} (atol {}, rtol {})", cv, rv, task.atol, task.rtol)
                                    : std::string(" (the values of this input are not shown)");
      if (unwritten)
        result.message += fmt::format("; {} elements were never written (still NaN)", unwritten);
    }
  }
  if (result.ok && all_zero_cand && !all_zero_ref) {
    result.ok = false;
    result.message = "every output is (near) zero but the expected outputs are not";
  }
  if (!result.ok && show_values) result.message += fmt::format("; max abs error {:.3g}", result.max_abs_err);
  return result;
}

}  // namespace leap::sandbox
