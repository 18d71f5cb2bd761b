// ResultCache: an LRU of VerifyResults by exact answer code.
#include "sandbox/result_cache.h"

#include <fmt/format.h>

#include <functional>

namespace leap::sandbox {

std::string ResultCache::key(const tasks::Task& task, const std::string& code) {
  return fmt::format("{}|{:016x}|{}", task.id, std::hash<std::string>{}(task.reference), code);
}

std::optional<VerifyResult> ResultCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  VerifyResult r = it->second->second;
  r.compile_ms = 0;
  r.exec_ms = 0;
  return r;
}

void ResultCache::insert(const std::string& key, const VerifyResult& result) {
  if (max_entries_ == 0 || result.verdict == Verdict::kSandboxError ||
      result.verdict == Verdict::kTimeout)
    return;
  std::lock_guard lock(mutex_);
  if (index_.count(key)) return;
  lru_.emplace_front(key, result);
  index_[key] = lru_.begin();
  if (lru_.size() > max_entries_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

uint64_t ResultCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

}  // namespace leap::sandbox
