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
  return lru_.find(key).value_or(nullptr);
}

void ReferenceCache::insert(const std::string& key, std::shared_ptr<const Outputs> outputs) {
  size_t bytes = key.size();
  for (const auto& b : *outputs) bytes += b.bytes.size() + b.name.size();
  lru_.insert(key, std::move(outputs), bytes);
}

}  // namespace leap::sandbox
