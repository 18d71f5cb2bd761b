// Input generation (inputs.h). Each value is drawn in double, then rounded once into the
// buffer's dtype by write_element, so an f16 input is the nearest-even f16 of its draw. A buffer
// is drawn in chunks of kInputChunk values, each from its own stream, so threads can share it.
// randint(a,b) is inclusive of both bounds, drawn without modulo bias (Rng::below).
#include "tasks/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

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

uint64_t input_chunk_stream(uint64_t buffer_stream, uint64_t chunk) {
  if (chunk == 0) return buffer_stream;
  uint64_t x = buffer_stream ^ (chunk * 0xD1B54A32D192ED03ull);
  return Rng::splitmix64(&x);
}

namespace {

// Elements [begin, end) of a buffer from its init, drawn from `rng`.
void draw(uint8_t* data, DType dtype, const Init& init, size_t begin, size_t end, Rng& rng) {
  switch (init.kind) {
    case Init::Kind::kZeros:
      break;  // already zero bytes, which is 0 in every dtype
    case Init::Kind::kOnes:
      for (size_t i = begin; i < end; ++i) write_element(data, dtype, i, 1.0);
      break;
    case Init::Kind::kNormal:
      for (size_t i = begin; i < end; ++i) write_element(data, dtype, i, rng.normal());
      break;
    case Init::Kind::kUniform:
      for (size_t i = begin; i < end; ++i) write_element(data, dtype, i, rng.uniform(init.a, init.b));
      break;
    case Init::Kind::kRandint: {
      const auto lo = static_cast<int64_t>(init.a);
      const auto span = static_cast<uint64_t>(static_cast<int64_t>(init.b) - lo) + 1;  // inclusive
      for (size_t i = begin; i < end; ++i)
        write_element(data, dtype, i, static_cast<double>(lo + static_cast<int64_t>(rng.below(span))));
      break;
    }
  }
}

// Chunk c of the buffer from its own stream; the chunks split over up to `threads` threads in
// contiguous runs (each chunk is the same whichever thread draws it).
void draw_chunks(uint8_t* data, const BufferSpec& spec, size_t n, uint64_t seed, uint64_t stream, int threads) {
  const size_t chunks = (n + kInputChunk - 1) / kInputChunk;
  auto run = [&](size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c) {
      Rng rng(seed, input_chunk_stream(stream, c));
      draw(data, spec.dtype, spec.init, c * kInputChunk, std::min(n, (c + 1) * kInputChunk), rng);
    }
  };
  const size_t t = std::min(chunks, static_cast<size_t>(std::max(1, threads)));
  // Run k of t: chunks [chunks * k / t, chunks * (k + 1) / t). A thread that cannot start (a
  // process or thread limit) leaves its runs to this thread, which gives the same values.
  std::vector<std::thread> pool;
  size_t started = 1;
  try {
    pool.reserve(t - 1);
    for (; started < t; ++started) pool.emplace_back(run, chunks * started / t, chunks * (started + 1) / t);
  } catch (const std::exception&) {
  }
  run(0, chunks / t);
  run(chunks * started / t, chunks);
  for (auto& th : pool) th.join();
}

}  // namespace

Expected<std::vector<BufferData>> generate_inputs(const Task& task, const Params& params,
                                                  uint64_t seed, uint64_t trial, int threads) {
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
    if (spec.role != Role::kOut && spec.init.kind != Init::Kind::kZeros)
      draw_chunks(b.bytes.data(), spec, static_cast<size_t>(b.elements), seed,
                  input_stream_id(trial, spec.name), threads);
    out.push_back(std::move(b));
  }
  return out;
}

void fill_poison(BufferData& buffer) {
  const size_t esize = dtype_size(buffer.dtype);
  buffer.bytes.resize(static_cast<size_t>(buffer.elements) * esize);
  switch (buffer.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: {
      // One NaN in the dtype, then copies of what is filled, doubling (GPU-sized outputs have
      // tens of millions of elements).
      if (buffer.bytes.empty()) break;
      write_element(buffer.bytes.data(), buffer.dtype, 0, std::numeric_limits<double>::quiet_NaN());
      for (size_t done = esize; done < buffer.bytes.size(); done *= 2)
        std::memcpy(buffer.bytes.data() + done, buffer.bytes.data(), std::min(done, buffer.bytes.size() - done));
      break;
    }
    default:
      std::fill(buffer.bytes.begin(), buffer.bytes.end(), uint8_t{0x7E});
  }
}

}  // namespace leap::tasks
