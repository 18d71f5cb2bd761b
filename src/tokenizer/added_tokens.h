// Added tokens of tokenizer.json ("added_tokens"): strings matched in the text before the
// pre-tokenizer runs, each one token. Matching is leftmost-longest over all added tokens, then
// each match is checked and widened by its flags, exactly as Hugging Face's AddedVocabulary:
//   single_word  the neighbouring characters must not be word characters (Rust regex \w);
//   lstrip       whitespace just before the match joins the token;
//   rstrip       whitespace just after the match joins the token;
//   normalized   the token is matched in the normalized text (after the normalizer) rather than
//                the raw text.
// With parse_special false (untrusted text), matches of *special* tokens are skipped and stay
// plain text, as `encode_special_tokens = True` does; they still take their place in the
// leftmost-longest scan, so a special string never yields a shorter token inside it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace leap::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

// A run of the text: an added token (id >= 0) or plain text (id == -1), as [begin, end).
struct TextSegment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  // Cuts text (valid UTF-8) into segments covering it, in order.
  void split(std::string_view text, bool parse_special, std::vector<TextSegment>& out) const;
  // The same, where a special token matches only at [start, stop) that `special_allowed` accepts
  // (a chat template's own markers, never the messages' text).
  void split(std::string_view text, const std::function<bool(size_t, size_t)>& special_allowed,
             std::vector<TextSegment>& out) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::vector<int32_t>> by_first_byte_;  // byte -> token indices, longest first
};

// Parses "added_tokens" (an array; null or absent is none).
Expected<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& j,
                                                     const std::string& field);

}  // namespace leap::tokenizer
