// Merging keeps the word as a linked list of symbols. Short words (the common case) scan for
// the lowest-rank pair; long ones (whitespace runs, rows of '=') use a heap of candidate pairs,
// each re-checked when popped because its symbols may have merged since. Both orders are
// (rank, leftmost), so they give the same result.
#include "tokenizer/bpe.h"

#include <mutex>
#include <queue>

#include <nlohmann/json.hpp>

#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

// Words longer than this (in symbols) merge with the heap.
constexpr size_t kScanLimit = 24;
// The per-word cache stops growing here (no eviction: a full cache just answers fewer words).
constexpr size_t kCacheCapacity = 1 << 18;
// Words longer than this (in bytes) are not cached: long runs are rare and each is different.
constexpr size_t kCacheMaxWordBytes = 256;

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  bool live;
};

}  // namespace

struct BpeModel::Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::vector<int32_t>> words;
};

Expected<BpeModel> BpeModel::from_json(const nlohmann::json& j, const std::string& field) {
  if (!j.is_object()) return invalid_input("field '" + field + "': expected an object");
  if (j.contains("type") && !(j["type"].is_string() && j["type"] == "BPE"))
    return unsupported("field '" + field + ".type': unsupported model '" +
                       (j["type"].is_string() ? j["type"].get<std::string>() : j["type"].dump()) +
                       "' (supported: BPE)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty())
      return unsupported("field '" + field + "." + key + "': a non-empty value is not supported");
  if (j.contains("dropout") && !j["dropout"].is_null())
    return unsupported("field '" + field +
                       ".dropout': BPE dropout is not supported (must be null)");
  if (j.contains("byte_fallback") && j["byte_fallback"].is_boolean() &&
      j["byte_fallback"].get<bool>())
    return unsupported("field '" + field + ".byte_fallback': true is not supported");

  BpeModel m;
  if (!j.contains("vocab") || !j["vocab"].is_object())
    return invalid_input("field '" + field + ".vocab': expected an object of token -> id");
  m.vocab_.reserve(j["vocab"].size());
  int32_t max_id = -1;
  for (auto it = j["vocab"].begin(); it != j["vocab"].end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= (1 << 30))
      return invalid_input("field '" + field + ".vocab[\"" + it.key() +
                           "\"]': expected an id >= 0");
    const auto id = it.value().get<int32_t>();
    m.vocab_.emplace(it.key(), id);
    max_id = std::max(max_id, id);
  }
  m.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  m.has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [tok, id] : m.vocab_) {
    m.id_to_token_[id] = tok;
    m.has_id_[id] = true;
  }

  if (!j.contains("merges") || !j["merges"].is_array())
    return invalid_input("field '" + field + ".merges': expected an array");
  const auto& merges = j["merges"];
  m.merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string where = "field '" + field + ".merges[" + std::to_string(r) + "]'";
    std::string a, b;
    if (merges[r].is_string()) {  // "a b"
      const std::string s = merges[r];
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() ||
          s.find(' ', sp + 1) != std::string::npos)
        return invalid_input(where + ": expected \"LEFT RIGHT\", got \"" + s + "\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (merges[r].is_array() && merges[r].size() == 2 && merges[r][0].is_string() &&
               merges[r][1].is_string()) {
      a = merges[r][0];
      b = merges[r][1];
    } else {
      return invalid_input(where + ": expected \"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]");
    }
    auto ia = m.vocab_.find(a), ib = m.vocab_.find(b), iab = m.vocab_.find(a + b);
    if (ia == m.vocab_.end() || ib == m.vocab_.end())
      return invalid_input(where + ": '" + (ia == m.vocab_.end() ? a : b) +
                           "' is not in the vocab");
    if (iab == m.vocab_.end())
      return invalid_input(where + ": the merged token '" + a + b + "' is not in the vocab");
    // A pair listed twice keeps its first (lowest) rank, as Hugging Face does.
    m.merges_.emplace(pair_key(ia->second, ib->second),
                      Merge{static_cast<int32_t>(r), iab->second});
  }

  if (j.contains("unk_token") && j["unk_token"].is_string()) {
    auto it = m.vocab_.find(j["unk_token"].get<std::string>());
    if (it == m.vocab_.end())
      return invalid_input("field '" + field + ".unk_token': '" +
                           j["unk_token"].get<std::string>() + "' is not in the vocab");
    m.unk_id_ = it->second;
  }
  m.fuse_unk_ = j.contains("fuse_unk") && j["fuse_unk"].is_boolean() && j["fuse_unk"].get<bool>();
  m.ignore_merges_ = j.contains("ignore_merges") && j["ignore_merges"].is_boolean() &&
                     j["ignore_merges"].get<bool>();
  m.cache_ = std::make_shared<Cache>();
  return m;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

const BpeModel::Merge* BpeModel::find_merge(int32_t a, int32_t b) const {
  auto it = merges_.find(pair_key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (auto it = cache_->words.find(key); it != cache_->words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (cache_->words.size() < kCacheCapacity)
      cache_->words.emplace(
          std::move(key),
          std::vector<int32_t>(out.begin() + static_cast<ptrdiff_t>(start), out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  // One symbol per character; a character outside the vocab becomes unk when there is one (with
  // fuse_unk a run of unknowns is one) or is dropped, as Hugging Face does.
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  std::string ch;
  bool prev_unknown = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8_sequence_length(word, i);
    if (n == 0) n = 1;
    ch.assign(word.substr(i, n));
    i += n;
    auto it = vocab_.find(ch);
    if (it == vocab_.end()) {
      if (!unk_id_) continue;
      if (fuse_unk_ && prev_unknown) continue;
      prev_unknown = true;
      syms.push_back({*unk_id_, 0, 0, true});
    } else {
      syms.push_back({it->second, 0, 0, true});
      prev_unknown = false;
    }
  }
  if (syms.empty()) return;
  const auto count = static_cast<int32_t>(syms.size());
  for (int32_t k = 0; k < count; ++k) {
    syms[k].prev = k - 1;
    syms[k].next = k + 1 < count ? k + 1 : -1;
  }
  auto merge_at = [&](int32_t left, int32_t new_id) {
    const int32_t right = syms[left].next;
    syms[left].id = new_id;
    syms[right].live = false;
    syms[left].next = syms[right].next;
    if (syms[right].next >= 0) syms[syms[right].next].prev = left;
  };

  if (syms.size() <= kScanLimit) {
    for (;;) {
      int32_t best = -1;
      const Merge* best_merge = nullptr;
      for (int32_t k = 0; k >= 0 && syms[k].next >= 0; k = syms[k].next) {
        const Merge* mg = find_merge(syms[k].id, syms[syms[k].next].id);
        if (mg && (!best_merge || mg->rank < best_merge->rank)) {
          best = k;
          best_merge = mg;
        }
      }
      if (!best_merge) break;
      merge_at(best, best_merge->id);
    }
  } else {
    struct Candidate {
      int32_t rank, pos;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto push = [&](int32_t k) {
      if (k < 0 || syms[k].next < 0) return;
      if (const Merge* mg = find_merge(syms[k].id, syms[syms[k].next].id)) heap.push({mg->rank, k});
    };
    for (int32_t k = 0; k < count; ++k) push(k);
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      if (!syms[c.pos].live || syms[c.pos].next < 0) continue;
      const Merge* mg = find_merge(syms[c.pos].id, syms[syms[c.pos].next].id);
      if (!mg || mg->rank != c.rank) continue;  // stale: a neighbour merged since
      merge_at(c.pos, mg->id);
      push(syms[c.pos].prev);
      push(c.pos);
    }
  }
  for (int32_t k = 0; k >= 0; k = syms[k].next) out.push_back(syms[k].id);
}

}  // namespace leap::tokenizer
