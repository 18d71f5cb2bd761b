// Fuzz target: a safetensors file (a policy checkpoint, possibly downloaded): the 8-byte header
// length, the JSON header and every tensor's byte range. Each tensor the header accepts is then
// read as fp32 into a buffer of exactly its shape's element count, as model loading does, so an
// accepted header whose ranges do not match its shapes shows up as an overflow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = leap::model::SafetensorsFile::parse(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
  if (!file) return 0;
  for (const auto& [name, entry] : file->entries()) {
    // An accepted entry's byte range holds exactly its shape (counted without wrapping).
    size_t numel = 1;
    for (int64_t d : entry.shape)
      if (__builtin_mul_overflow(numel, static_cast<size_t>(d), &numel)) std::abort();
    const size_t value_bytes = entry.dtype == leap::model::DType::kF32 ? 4 : 2;
    size_t bytes = 0;
    if (__builtin_mul_overflow(numel, value_bytes, &bytes) || bytes != entry.end - entry.begin)
      std::abort();
    std::vector<float> out(numel);
    (void)file->read_f32(name, entry.shape, out.data());
  }
  return 0;
}
