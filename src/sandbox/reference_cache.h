// Reference outputs, computed once per (task, reference text, sizes, seed, trial) and kept in a
// byte-bounded LRU. Thread-safe. Two threads missing the same key may both compute it; the
// result is identical, and the second insert is dropped.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sandbox/job.h"

namespace leap::sandbox {

using Outputs = std::vector<tasks::BufferData>;

class ReferenceCache {
 public:
  explicit ReferenceCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  static std::string key(const tasks::Task& task, const TrialSpec& trial);
  std::shared_ptr<const Outputs> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const Outputs> outputs);

  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Outputs> outputs;
    size_t bytes = 0;
  };
  mutable std::mutex mutex_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace leap::sandbox
