// ResultCache: an LRU of VerifyResults by exact answer code.
#include "sandbox/result_cache.h"

#include <fmt/format.h>

#include <functional>

namespace leap::sandbox {

std::string ResultCache::key(const tasks::Task& task, const std::string& code) {
  return fmt::format("{}|{:016x}|{}", task.id, std::hash<std::string>{}(task.reference), code);
}

std::optional<VerifyResult> ResultCache::find(const std::string& key) {
  std::optional<VerifyResult> r = lru_.find(key);
  if (r) {
    r->compile_ms = 0;
    r->exec_ms = 0;
  }
  return r;
}

void ResultCache::insert(const std::string& key, const VerifyResult& result) {
  if (result.verdict == Verdict::kSandboxError || result.verdict == Verdict::kTimeout) return;
  lru_.insert(key, result, 1);
}

}  // namespace leap::sandbox
