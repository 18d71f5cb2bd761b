// safetensors reading (F32/BF16/F16 to fp32) and writing (F32/BF16), with validation of every byte
// range against the file. Assumes a little-endian host, as every supported platform is.
#include "model/safetensors.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/fs_util.h"

namespace leap::model {
namespace {

using json = nlohmann::json;

size_t dtype_size(DType d) {
  return d == DType::kF32 ? 4 : 2;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

FileBytes::~FileBytes() {
  if (map) munmap(map, size);
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(fmt::format("cannot read safetensors file {}: {}", path, std::strerror(errno)));
  struct stat st {};
  auto bytes = std::make_shared<FileBytes>();
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(fmt::format("cannot stat {}: {}", path, std::strerror(err)));
  }
  bytes->size = static_cast<size_t>(st.st_size);
  if (bytes->size > 0) {
    void* m = mmap(nullptr, bytes->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error(fmt::format("cannot map {}: {}", path, std::strerror(err)));
    }
    bytes->map = m;
  }
  ::close(fd);
  return from(std::move(bytes), path);
}

Expected<SafetensorsFile> SafetensorsFile::parse(std::string bytes, const std::string& path) {
  auto owned = std::make_shared<FileBytes>();
  owned->owned = std::move(bytes);
  owned->size = owned->owned.size();
  return from(std::move(owned), path);
}

Expected<SafetensorsFile> SafetensorsFile::from(std::shared_ptr<const FileBytes> bytes,
                                                const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.bytes_ = std::move(bytes);
  const char* data = f.bytes_->data();
  const size_t size = f.bytes_->size;
  auto bad = [&](const std::string& m) { return invalid_input(fmt::format("{}: {}", path, m)); };
  if (size < 8) return bad("truncated file: no header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);
  if (header_len > size - 8)
    return bad(fmt::format("truncated file: header of {} bytes", header_len));
  f.data_offset_ = 8 + header_len;
  const size_t data_size = size - f.data_offset_;
  json h = json::parse(data + 8, data + f.data_offset_, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return bad("header is not a JSON object");
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string& name = it.key();
    const json& e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets"))
      return bad(
          fmt::format("tensor '{}': header entry needs dtype, shape and data_offsets", name));
    SafetensorEntry entry;
    const std::string dtype = e["dtype"].is_string() ? e["dtype"].get<std::string>() : "?";
    if (dtype == "F32")
      entry.dtype = DType::kF32;
    else if (dtype == "F16")
      entry.dtype = DType::kF16;
    else if (dtype == "BF16")
      entry.dtype = DType::kBF16;
    else
      return bad(
          fmt::format("tensor '{}': dtype {} is not supported (F32, BF16, F16)", name, dtype));
    size_t numel = 1;
    if (!e["shape"].is_array()) return bad(fmt::format("tensor '{}': shape is not a list", name));
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return bad(fmt::format("tensor '{}': bad shape", name));
      entry.shape.push_back(d.get<int64_t>());
      // Checked: a wrapped count could match a small (even empty) byte range, and the caller
      // would then allocate and read the shape's true size.
      if (__builtin_mul_overflow(numel, static_cast<size_t>(d.get<int64_t>()), &numel) ||
          numel > SIZE_MAX / 4)
        return bad(fmt::format("tensor '{}': shape {} holds too many values", name,
                               shape_to_string(entry.shape)));
    }
    const json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      return bad(fmt::format("tensor '{}': data_offsets must be two non-negative integers", name));
    entry.begin = off[0].get<size_t>();
    entry.end = off[1].get<size_t>();
    if (entry.begin > entry.end || entry.end > data_size)
      return bad(
          fmt::format("tensor '{}': bytes [{}, {}) lie outside the {} data bytes (truncated file?)",
                      name, entry.begin, entry.end, data_size));
    if (entry.end - entry.begin != numel * dtype_size(entry.dtype))
      return bad(fmt::format("tensor '{}': {} bytes do not hold {} {} values", name,
                             entry.end - entry.begin, shape_to_string(entry.shape), dtype));
    f.entries_[name] = std::move(entry);
  }
  // The format's rule, as its own loader checks it: the tensors' byte ranges tile the data
  // section from 0 to its end, with no overlap (two tensors sharing bytes would load silently)
  // and no hole (where a duplicate key's dropped entry would hide).
  std::vector<std::pair<const std::string*, const SafetensorEntry*>> by_offset;
  for (const auto& [name, e] : f.entries_) by_offset.emplace_back(&name, &e);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->begin, a.second->end) < std::tie(b.second->begin, b.second->end);
  });
  size_t covered = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, e] : by_offset) {
    if (e->begin < covered)
      return bad(fmt::format("tensor '{}': bytes [{}, {}) overlap tensor '{}' (which ends at {})", *name, e->begin,
                             e->end, *previous, covered));
    if (e->begin > covered)
      return bad(fmt::format("data bytes [{}, {}) belong to no tensor (before tensor '{}'): the file is damaged",
                             covered, e->begin, *name));
    covered = e->end;
    previous = name;
  }
  if (covered != data_size)
    return bad(fmt::format("data bytes [{}, {}) belong to no tensor (after the last one): the file is damaged",
                           covered, data_size));
  return f;
}

Status SafetensorsFile::read_f32(const std::string& name, const std::vector<int64_t>& shape,
                                 float* out) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    return invalid_input(fmt::format("{}: tensor '{}' is missing", path_, name));
  const SafetensorEntry& e = it->second;
  if (e.shape != shape)
    return invalid_input(fmt::format("{}: tensor '{}' has shape {}, the config needs {}", path_,
                                     name, shape_to_string(e.shape), shape_to_string(shape)));
  const char* src = bytes_->data() + data_offset_ + e.begin;
  const size_t n = (e.end - e.begin) / dtype_size(e.dtype);
  // An empty tensor (a 0 in its shape) copies nothing; its caller may pass a null `out` (an
  // empty vector's data()), and memcpy's pointers must be valid even for 0 bytes.
  if (n == 0) return Status::ok();
  if (e.dtype == DType::kF32) {
    std::memcpy(out, src, n * 4);
    return Status::ok();
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = e.dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
  }
  return Status::ok();
}

Status write_safetensors_streamed(
    const std::string& path, const std::vector<TensorToWrite>& tensors, DType stored,
    const std::function<const float*(size_t i, std::vector<float>& staging)>& data) {
  LEAP_CHECK(stored == DType::kF32 || stored == DType::kBF16, "safetensors are written as F32 or BF16");
  const size_t width = dtype_size(stored);
  json h = json::object();
  h["__metadata__"] = {{"format", "pt"}};
  size_t offset = 0;
  std::vector<size_t> numels;
  for (const auto& t : tensors) {
    size_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
    numels.push_back(numel);
    h[t.name] = {{"dtype", stored == DType::kF32 ? "F32" : "BF16"},
                 {"shape", t.shape},
                 {"data_offsets", {offset, offset + numel * width}}};
    offset += numel * width;
  }
  std::string header = h.dump();
  // Pad the header with spaces so the data section starts 8-byte aligned (as the format allows).
  while ((8 + header.size()) % 8 != 0) header.push_back(' ');
  AtomicWriter out(path);
  const uint64_t len = header.size();
  LEAP_RETURN_IF_ERROR(out.append(&len, 8));
  LEAP_RETURN_IF_ERROR(out.append(header.data(), header.size()));
  std::vector<float> staging;
  std::vector<uint16_t> half;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (numels[i] == 0) continue;
    const float* src = data(i, staging);
    if (stored == DType::kF32) {
      LEAP_RETURN_IF_ERROR(out.append(src, numels[i] * 4));
      continue;
    }
    half.resize(numels[i]);
    f32_to_bf16(src, numels[i], half.data());
    LEAP_RETURN_IF_ERROR(out.append(half.data(), numels[i] * 2));
  }
  return out.commit();
}

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors, DType stored) {
  return write_safetensors_streamed(path, tensors, stored,
                                    [&](size_t i, std::vector<float>&) { return tensors[i].data; });
}

}  // namespace leap::model
