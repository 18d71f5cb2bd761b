// The BPE model of tokenizer.json: vocab (token -> id), merges (ranked pairs, in the string form
// "a b" or the pair form ["a", "b"]) and ignore_merges (a word that is itself in the vocab is one
// token, merges or not). A word is split into characters, then the adjacent pair of lowest rank
// is merged, leftmost first, until no pair has a merge. Results are cached per word (bounded,
// thread-safe), as Hugging Face does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace leap::tokenizer {

class BpeModel {
 public:
  // Parses the "model" value; `field` names it in errors.
  static Expected<BpeModel> from_json(const nlohmann::json& j, const std::string& field);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocab string of id, or nullptr when id is not in the vocab.
  const std::string* id_to_token(int32_t id) const;
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  struct Cache;

  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  const Merge* find_merge(int32_t a, int32_t b) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;  // "" for ids the vocab does not use
  std::vector<bool> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::shared_ptr<Cache> cache_;
};

}  // namespace leap::tokenizer
