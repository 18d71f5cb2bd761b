// ReferenceCache: an LRU keyed by the reference's identity and the trial, bounded in bytes.
#include "sandbox/reference_cache.h"

#include <fmt/format.h>

#include <functional>

namespace leap::sandbox {

std::string ReferenceCache::key(const tasks::Task& task, const TrialSpec& trial) {
  // The reference text is part of the key (hashed), so an edited suite never reuses old outputs.
  return fmt::format("{}|{:016x}|{}|{}|{}", task.id, std::hash<std::string>{}(task.reference),
                     trial.sizes == tasks::SizeSet::kGpu ? "gpu" : "cpu", trial.seed, trial.trial);
}

std::shared_ptr<const Outputs> ReferenceCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->outputs;
}

void ReferenceCache::insert(const std::string& key, std::shared_ptr<const Outputs> outputs) {
  size_t bytes = key.size();
  for (const auto& b : *outputs) bytes += b.bytes.size() + b.name.size();
  std::lock_guard lock(mutex_);
  if (index_.count(key) || bytes > max_bytes_) return;
  lru_.push_front({key, std::move(outputs), bytes});
  index_[key] = lru_.begin();
  bytes_ += bytes;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

uint64_t ReferenceCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

uint64_t ReferenceCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace leap::sandbox
