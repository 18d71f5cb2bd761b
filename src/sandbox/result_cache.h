// Verdicts of answers already verified, keyed by (task, reference, exact code), so identical
// answers (common inside a group on an easy task) are judged once. Only deterministic verdicts
// are kept: SANDBOX_ERROR (the infrastructure's) and TIMEOUT (which on a loaded machine may be
// the wall clock's) are always verified again. Thread-safe LRU bounded by entry count.
#pragma once

#include <optional>
#include <string>

#include "sandbox/lru_cache.h"
#include "sandbox/verdict.h"
#include "tasks/task.h"

namespace leap::sandbox {

class ResultCache {
 public:
  explicit ResultCache(size_t max_entries) : lru_(max_entries) {}

  static std::string key(const tasks::Task& task, const std::string& code);
  // The cached result with compile_ms and exec_ms zeroed (nothing ran for it), or nullopt.
  std::optional<VerifyResult> find(const std::string& key);
  void insert(const std::string& key, const VerifyResult& result);
  uint64_t hits() const { return lru_.hits(); }

 private:
  LruCache<VerifyResult> lru_;  // each entry costs 1
};

}  // namespace leap::sandbox
