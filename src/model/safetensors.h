// safetensors files: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. Files are mapped, not read. We write F32 or BF16 with
// `__metadata__ {"format": "pt"}` (what HF transformers expects) and read F32, BF16 and F16,
// converting to fp32. Every malformed input (truncated file, bad header, byte ranges outside
// the data or not matching dtype x shape) is an invalid_input naming the file and the tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "common/status.h"

namespace leap::model {

enum class DType { kF32, kF16, kBF16 };

struct SafetensorEntry {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
};

// The bytes of one file: mapped read-only (open), or owned (parse). Mapped pages are read from
// the page cache as tensors are converted and are never copied whole into the heap, so loading
// a 15 GB checkpoint costs no 15 GB of process memory.
struct FileBytes {
  std::string owned;
  void* map = nullptr;
  size_t size = 0;
  const char* data() const { return map ? static_cast<const char*>(map) : owned.data(); }
  FileBytes() = default;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();
};

class SafetensorsFile {
 public:
  // Maps the file (mmap, read-only) and checks its header against its size.
  static Expected<SafetensorsFile> open(const std::string& path);
  // The same from a file's bytes in memory; `name` stands for the file in messages.
  static Expected<SafetensorsFile> parse(std::string bytes, const std::string& name);

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorEntry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // Converts tensor `name` to fp32 into out (numel floats). The shape must equal `shape`.
  Status read_f32(const std::string& name, const std::vector<int64_t>& shape, float* out) const;

 private:
  static Expected<SafetensorsFile> from(std::shared_ptr<const FileBytes> bytes, const std::string& path);

  std::string path_;
  std::shared_ptr<const FileBytes> bytes_;  // the whole file
  size_t data_offset_ = 0;                  // start of the data section in bytes_
  std::map<std::string, SafetensorEntry> entries_;
};

struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // host fp32, numel(shape) floats
};

// Writes the tensors atomically (temporary file + rename), stored as F32 or as BF16 (rounded to
// nearest, ties to even, as torch's .bfloat16() does: half the bytes, for committed or shipped
// weights; training keeps fp32).
Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         DType stored = DType::kF32);

// The same, streamed: tensor i's fp32 values come from data(i, staging) (which returns them,
// in `staging` or elsewhere) only when the file reaches it, and go out through a buffer of one
// tensor, so the file is never assembled in memory. `tensors[i].data` is not read.
Status write_safetensors_streamed(
    const std::string& path, const std::vector<TensorToWrite>& tensors, DType stored,
    const std::function<const float*(size_t i, std::vector<float>& staging)>& data);

// fp32 to bf16 bits (common/bf16.h), also as model::f32_to_bf16.
using ::leap::f32_to_bf16;

std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace leap::model
