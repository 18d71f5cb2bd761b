// Input generation (inputs.h). Each value is drawn in double, then rounded once into the
// buffer's dtype by write_element, so an f16 input is the nearest-even f16 of its draw.
// randint(a,b) is inclusive of both bounds, drawn without modulo bias (Rng::below).
#include "tasks/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/rng.h"
#include "tasks/dtype_convert.h"
#include "tasks/expr.h"

namespace leap::tasks {

const Params& params_for(const Task& task, SizeSet sizes) {
  return sizes == SizeSet::kGpu ? task.params : task.cpu_params;
}

Expected<int64_t> buffer_elements(const BufferSpec& buffer, const Params& params) {
  int64_t total = 1;
  for (const auto& dim : buffer.shape) {
    LEAP_ASSIGN_OR_RETURN(int64_t v, eval_int_expr(dim, params));
    if (v <= 0)
      return invalid_input(fmt::format("buffer '{}': dimension '{}' is {}: it must be positive",
                                       buffer.name, dim, v));
    if (__builtin_mul_overflow(total, v, &total))
      return invalid_input(
          fmt::format("buffer '{}': the element count overflows int64", buffer.name));
  }
  return total;
}

uint64_t input_stream_id(uint64_t trial, const std::string& buffer_name) {
  // FNV-1a of the name, then mixed with the trial so (trial, name) pairs land far apart.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : buffer_name) h = (h ^ c) * 0x100000001b3ull;
  uint64_t x = h ^ (trial * 0x9E3779B97F4A7C15ull);
  return Rng::splitmix64(&x);
}

Expected<std::vector<BufferData>> generate_inputs(const Task& task, const Params& params,
                                                  uint64_t seed, uint64_t trial) {
  std::vector<BufferData> out;
  out.reserve(task.buffers.size());
  for (const auto& spec : task.buffers) {
    BufferData b;
    b.name = spec.name;
    b.dtype = spec.dtype;
    b.role = spec.role;
    LEAP_ASSIGN_OR_RETURN(b.elements, buffer_elements(spec, params));
    const size_t esize = dtype_size(spec.dtype);
    if (static_cast<uint64_t>(b.elements) > std::numeric_limits<size_t>::max() / esize)
      return invalid_input(fmt::format("buffer '{}' is too large to allocate", spec.name));
    b.bytes.assign(static_cast<size_t>(b.elements) * esize, 0);
    if (spec.role != Role::kOut) {
      Rng rng(seed, input_stream_id(trial, spec.name));
      const Init& init = spec.init;
      const auto n = static_cast<size_t>(b.elements);
      uint8_t* data = b.bytes.data();
      switch (init.kind) {
        case Init::Kind::kZeros:
          break;  // already zero bytes, which is 0 in every dtype
        case Init::Kind::kOnes:
          for (size_t i = 0; i < n; ++i) write_element(data, spec.dtype, i, 1.0);
          break;
        case Init::Kind::kNormal:
          for (size_t i = 0; i < n; ++i) write_element(data, spec.dtype, i, rng.normal());
          break;
        case Init::Kind::kUniform:
          for (size_t i = 0; i < n; ++i)
            write_element(data, spec.dtype, i, rng.uniform(init.a, init.b));
          break;
        case Init::Kind::kRandint: {
          const auto lo = static_cast<int64_t>(init.a);
          const auto span =
              static_cast<uint64_t>(static_cast<int64_t>(init.b) - lo) + 1;  // inclusive
          for (size_t i = 0; i < n; ++i)
            write_element(data, spec.dtype, i,
                          static_cast<double>(lo + static_cast<int64_t>(rng.below(span))));
          break;
        }
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

void fill_poison(BufferData& buffer) {
  const auto n = static_cast<size_t>(buffer.elements);
  switch (buffer.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i)
        write_element(buffer.bytes.data(), buffer.dtype, i,
                      std::numeric_limits<double>::quiet_NaN());
      break;
    default:
      std::fill(buffer.bytes.begin(), buffer.bytes.end(), uint8_t{0xFF});
  }
}

}  // namespace leap::tasks
