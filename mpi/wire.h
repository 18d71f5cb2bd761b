// The wire format of LEAP's MPI messages: a flat little-endian byte string written field by
// field by WireWriter and read back in the same order by WireReader. Only messages.cpp uses
// these directly, so the format lives in one place. Readers check bounds: a short or corrupt
// message is an error, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace leap::mpi {

class WireWriter {
 public:
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put(const std::string& s) {
    put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    if constexpr (std::is_trivially_copyable_v<T>) {
      const auto* p = reinterpret_cast<const uint8_t*>(v.data());
      bytes_.insert(bytes_.end(), p, p + v.size() * sizeof(T));
    } else {
      for (const auto& x : v) put(x);
    }
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class WireReader {
 public:
  WireReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void get(T& v) {
    if (!take(sizeof(T))) return;
    std::memcpy(&v, p_ - sizeof(T), sizeof(T));
  }
  void get(std::string& s) {
    uint64_t n = 0;
    get(n);
    if (!take(n)) return;
    s.assign(reinterpret_cast<const char*>(p_ - n), n);
  }
  template <class T>
  void get(std::vector<T>& v) {
    uint64_t n = 0;
    get(n);
    if (!ok_) return;
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (n > static_cast<uint64_t>(end_ - p_) / sizeof(T)) {
        ok_ = false;
        return;
      }
      v.resize(n);
      // An empty vector's data() may be null, and memcpy's pointers must not be even for 0 bytes.
      if (n > 0) std::memcpy(v.data(), p_, n * sizeof(T));
      p_ += n * sizeof(T);
    } else {
      if (n > static_cast<uint64_t>(end_ - p_)) {  // every element takes at least one byte
        ok_ = false;
        return;
      }
      v.resize(n);
      for (auto& x : v) get(x);
    }
  }
  // True when every get() so far fitted and the whole message was consumed.
  bool done() const { return ok_ && p_ == end_; }
  bool ok() const { return ok_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  void fail() { ok_ = false; }

 private:
  bool take(uint64_t n) {
    if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) {
      ok_ = false;
      return false;
    }
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace leap::mpi
