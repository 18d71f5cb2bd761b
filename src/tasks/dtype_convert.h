// Host-side conversions between double and the element types of task buffers. The sandbox fills
// inputs and reads outputs through these, so they define what "the value 0.1 in an f16 buffer"
// means on every machine. Invariants: narrowing to f16/bf16 rounds to nearest, ties to even,
// straight from double (no double rounding through float); overflow gives ±inf, NaN stays NaN;
// integer writes take values already in range (the loader guarantees it for inits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tasks/task.h"

namespace leap::tasks {

uint16_t f16_bits_from_double(double x);
uint16_t bf16_bits_from_double(double x);
double f16_bits_to_double(uint16_t bits);
double bf16_bits_to_double(uint16_t bits);

// Element `index` of a buffer of T at `data` (which need not be aligned for T), as stored.
template <class T>
T load(const uint8_t* data, size_t index) {
  T v;
  std::memcpy(&v, data + index * sizeof(T), sizeof(T));
  return v;
}

// Element `index` of a buffer of `dtype` at `data`, widened to double (exact for every dtype
// except i64 beyond 2^53).
double read_element(const uint8_t* data, DType dtype, size_t index);
// Stores `value` as element `index`: rounded to nearest-even for floats; integers are rounded to
// nearest and saturated to the dtype's range.
void write_element(uint8_t* data, DType dtype, size_t index, double value);

}  // namespace leap::tasks
