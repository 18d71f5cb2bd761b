// LruCache: a thread-safe map from string keys to values that forgets the least recently used
// entries once their total cost passes a bound. The cost is the caller's: 1 per entry for the
// verdict cache, bytes for the reference outputs. The sandbox's worker threads share one cache,
// hence the lock; values are returned by copy (cheap: a VerifyResult, or a shared_ptr).
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace leap::sandbox {

template <typename V>
class LruCache {
 public:
  explicit LruCache(size_t max_cost) : max_cost_(max_cost) {}

  // The value, now the most recently used; nullopt on a miss. Counts hits and misses.
  std::optional<V> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  // Keeps `value` unless the key is already there (two threads that missed the same key computed
  // the same value; the first stays) or its cost alone exceeds the bound (a bound of 0 keeps
  // nothing). Then drops least recently used entries until the total is within the bound.
  void insert(const std::string& key, V value, size_t cost) {
    std::lock_guard lock(mutex_);
    if (index_.count(key) || cost > max_cost_) return;
    lru_.push_front({key, std::move(value), cost});
    index_[key] = lru_.begin();
    total_cost_ += cost;
    while (total_cost_ > max_cost_) {
      total_cost_ -= lru_.back().cost;
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  uint64_t hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
  }

 private:
  struct Entry {
    std::string key;
    V value;
    size_t cost = 0;
  };
  mutable std::mutex mutex_;
  size_t max_cost_;
  size_t total_cost_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

}  // namespace leap::sandbox
