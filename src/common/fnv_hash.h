// FNV-1a over the raw bits of a float array: any bit difference changes it, and it depends on
// nothing but the values and their order. Used to compare parameter replicas across ranks and
// to fingerprint the KL reference policy in checkpoints. The byte form fingerprints texts (the
// sources a generated document was made from).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace leap {

// `h` continues an earlier call's result, so that a long array can be hashed in pieces.
inline constexpr uint64_t kFnv1aBasis = 1469598103934665603ull;
inline uint64_t fnv1a_floats(const float* data, size_t n, uint64_t h = kFnv1aBasis) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

inline uint64_t fnv1a_bytes(std::string_view bytes, uint64_t h = kFnv1aBasis) {
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace leap
