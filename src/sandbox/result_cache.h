// Verdicts of answers already verified, keyed by (task, reference, exact code), so identical
// answers (common inside a group on an easy task) are judged once. Only deterministic verdicts
// are kept: SANDBOX_ERROR (the infrastructure's) and TIMEOUT (which on a loaded machine may be
// the wall clock's) are always verified again. Thread-safe LRU bounded by entry count.
#pragma once

#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "sandbox/verdict.h"
#include "tasks/task.h"

namespace leap::sandbox {

class ResultCache {
 public:
  explicit ResultCache(size_t max_entries) : max_entries_(max_entries) {}

  static std::string key(const tasks::Task& task, const std::string& code);
  // The cached result with compile_ms and exec_ms zeroed (nothing ran for it), or nullopt.
  std::optional<VerifyResult> find(const std::string& key);
  void insert(const std::string& key, const VerifyResult& result);
  uint64_t hits() const;

 private:
  mutable std::mutex mutex_;
  size_t max_entries_;
  uint64_t hits_ = 0;
  std::list<std::pair<std::string, VerifyResult>> lru_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, VerifyResult>>::iterator> index_;
};

}  // namespace leap::sandbox
