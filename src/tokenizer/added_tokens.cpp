// Candidates are indexed by their first byte, longest first, so the scan costs one table look-up
// per byte of text that cannot start an added token.
#include "tokenizer/added_tokens.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tokenizer/regex_pattern.h"
#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

// Hugging Face decides single_word with the Rust regex crate's Unicode \w on the neighbouring
// character: Alphabetic, marks, decimal digits, connector punctuation (so '_' and a combining
// accent touch a word, '②' does not) and the joiners.
// Characters newer than Debian's PCRE2 tables (Unicode 14) that HF's newer tables make \w are
// listed in word_char_exceptions.inc (tests/tokenizer/word_char_scan.py).
struct CodeRange {
  char32_t lo, hi;
};
constexpr CodeRange kNewWordChars[] = {
#include "tokenizer/word_char_exceptions.inc"
};

bool is_word_char(std::string_view text, size_t at, size_t len) {
  const size_t n = utf8_sequence_length(text, at);
  if (n == len && n > 1) {
    const char32_t cp = utf8_decode_at(text, at, n);
    for (const CodeRange& r : kNewWordChars)
      if (cp >= r.lo && cp <= r.hi) return true;
  }
  static const RegexPattern kWord =
      *RegexPattern::compile(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])");
  std::vector<std::pair<size_t, size_t>> m;
  kWord.find_all(text.substr(at, len), m);
  return !m.empty();
}

// Rust's \s and char::is_whitespace: the Unicode White_Space property.
bool is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// The last character of text[0, end), or 0 when there is none.
char32_t char_before(std::string_view text, size_t end, size_t* start = nullptr) {
  if (end == 0) return 0;
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  if (start) *start = b;
  const size_t n = utf8_sequence_length(text, b);
  return n ? utf8_decode_at(text, b, n) : 0;
}

char32_t char_at(std::string_view text, size_t at, size_t* len = nullptr) {
  if (at >= text.size()) return 0;
  const size_t n = utf8_sequence_length(text, at);
  if (len) *len = n ? n : 1;
  return n ? utf8_decode_at(text, at, n) : 0;
}

bool get_bool(const nlohmann::json& j, const char* key, bool def) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : def;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  by_first_byte_.resize(256);
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].content.empty())
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(
          static_cast<int32_t>(i));
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special,
                              std::vector<TextSegment>& out) const {
  split(text, [parse_special](size_t, size_t) { return parse_special; }, out);
}

void AddedTokenMatcher::split(std::string_view text,
                              const std::function<bool(size_t, size_t)>& special_allowed,
                              std::vector<TextSegment>& out) const {
  size_t done = 0;  // text before this is already in `out`
  size_t pos = 0;   // where the leftmost-longest scan resumes
  while (pos < text.size()) {
    if (by_first_byte_.empty()) break;
    const AddedToken* hit = nullptr;
    for (int32_t k : by_first_byte_[static_cast<unsigned char>(text[pos])])
      if (text.compare(pos, tokens_[k].content.size(), tokens_[k].content) == 0) {
        hit = &tokens_[k];
        break;
      }
    if (!hit) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + hit->content.size();
    pos = stop;  // the scan goes on after the raw match, whatever the flags do below
    if (hit->special && !special_allowed(start, stop)) continue;
    if (hit->single_word) {
      size_t b = 0, len = 0;
      if (start > 0) char_before(text, start, &b);
      if (stop < text.size()) char_at(text, stop, &len);
      const bool space_before = start == 0 || !is_word_char(text, b, start - b);
      const bool space_after = stop == text.size() || !is_word_char(text, stop, len);
      if (!space_before || !space_after) continue;
    }
    if (hit->lstrip) {
      size_t s = start, b = 0;
      while (s > 0 && is_white_space(char_before(text, s, &b))) s = b;
      start = std::max(s, done);  // whitespace an earlier match already took stays with it
    }
    if (hit->rstrip) {
      size_t len = 0;
      while (stop < text.size() && is_white_space(char_at(text, stop, &len))) stop += len;
    }
    if (start > done) out.push_back({done, start, -1});
    out.push_back({start, stop, hit->id});
    done = stop;
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

Expected<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& j,
                                                     const std::string& field) {
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return invalid_input("field '" + field + "': expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = field + "[" + std::to_string(i) + "]";
    const auto& t = j[i];
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
        t["id"].get<int64_t>() < 0)
      return invalid_input("field '" + where + ".id': expected an id >= 0");
    if (!t.contains("content") || !t["content"].is_string() ||
        t["content"].get<std::string>().empty())
      return invalid_input("field '" + where + ".content': expected a non-empty string");
    AddedToken a;
    a.id = t["id"].get<int32_t>();
    a.content = t["content"];
    a.special = get_bool(t, "special", false);
    a.lstrip = get_bool(t, "lstrip", false);
    a.rstrip = get_bool(t, "rstrip", false);
    a.single_word = get_bool(t, "single_word", false);
    a.normalized = get_bool(t, "normalized", !a.special);
    if (!is_valid_utf8(a.content))
      return invalid_input("field '" + where + ".content': not valid UTF-8");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace leap::tokenizer
