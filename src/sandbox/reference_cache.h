// Reference outputs, computed once per (task, reference text, sizes, seed, trial) and kept in a
// byte-bounded LRU. Thread-safe. Two threads missing the same key may both compute it; the
// result is identical, and the second insert is dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/job.h"
#include "sandbox/lru_cache.h"

namespace leap::sandbox {

using Outputs = std::vector<tasks::BufferData>;

class ReferenceCache {
 public:
  explicit ReferenceCache(size_t max_bytes) : lru_(max_bytes) {}

  static std::string key(const tasks::Task& task, const TrialSpec& trial);
  std::shared_ptr<const Outputs> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const Outputs> outputs);

  uint64_t hits() const { return lru_.hits(); }
  uint64_t misses() const { return lru_.misses(); }

 private:
  LruCache<std::shared_ptr<const Outputs>> lru_;  // each entry costs its bytes
};

}  // namespace leap::sandbox
