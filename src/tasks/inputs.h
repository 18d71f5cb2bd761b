// Input generation for one trial of a task: the bytes of every buffer, sized from its shape
// expressions under a parameter set (GPU `params` or interpreter `cpu_params`) and filled by its
// init. Invariants: the bytes depend only on (task buffers, params, seed, trial) — each buffer
// draws from its own leap::Rng stream keyed by (trial, buffer name), so adding a buffer or
// reordering buffers leaves the others' inputs unchanged; values are rounded into the dtype
// (f16/bf16 to nearest-even), so the candidate and the reference see identical bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tasks/task.h"

namespace leap::tasks {

enum class SizeSet { kGpu, kCpu };

// The task's `params` (kGpu) or `cpu_params` (kCpu).
const Params& params_for(const Task& task, SizeSet sizes);

// Product of the buffer's shape expressions under `params`; invalid_input when an expression
// fails, a dimension is not positive, or the product overflows.
Expected<int64_t> buffer_elements(const BufferSpec& buffer, const Params& params);

struct BufferData {
  std::string name;
  DType dtype = DType::kF32;
  Role role = Role::kIn;
  int64_t elements = 0;
  std::vector<uint8_t> bytes;  // elements * dtype_size(dtype)
};

// Every buffer of the task, in the task's order. `in` and `inout` buffers are filled from their
// init; `out` buffers are zero bytes (the verifier poisons them before a launch: fill_poison).
// A buffer is drawn in chunks of kInputChunk elements, each from its own stream (chunk 0 from
// the buffer's stream, input_stream_id, as a buffer of one chunk always was), so the values do
// not depend on `threads`, the threads that draw the chunks (GPU sizes: tens of millions of
// values a trial).
Expected<std::vector<BufferData>> generate_inputs(const Task& task, const Params& params,
                                                  uint64_t seed, uint64_t trial, int threads = 1);
inline constexpr size_t kInputChunk = size_t{1} << 16;

// Fills with NaN (float dtypes) or 0x7E bytes (integers: 2122219134 as i32, 126 as u8), so a
// kernel that writes nothing is seen to have written nothing. Not 0xFF: that is -1, a value the
// integer tasks' outputs take (scans and gathers of small signed inputs), where an element left
// unwritten would have passed. Sizes the bytes to the buffer's elements first.
void fill_poison(BufferData& buffer);

// The Rng stream id of one buffer in one trial (exposed so tests can pin the keying), and of its
// chunk `chunk` (chunk 0: the buffer's own).
uint64_t input_stream_id(uint64_t trial, const std::string& buffer_name);
uint64_t input_chunk_stream(uint64_t buffer_stream, uint64_t chunk);

}  // namespace leap::tasks
