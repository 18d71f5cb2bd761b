// bfloat16 bits to and from fp32 on the host: the export of bf16 checkpoints and the KV cache's
// bf16 storage (backend.h's KvDtype) round the same way as the GPU's __float2bfloat16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace leap {

// fp32 to bf16 bits: round to nearest even; a NaN stays a (quiet) NaN, infinities stay.
inline uint16_t f32_to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; a carry out of
  // the mantissa correctly bumps the exponent (up to infinity for values past bf16's range).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// bf16 bits to fp32: exact (bf16 is fp32's upper half).
inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The same over n values.
inline void f32_to_bf16(const float* x, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}
inline void bf16_to_f32(const uint16_t* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(x[i]);
}

}  // namespace leap
