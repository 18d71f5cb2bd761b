// The encode pipeline and the id -> bytes side of HfTokenizer.
#include "tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

// Used for EOS when there is no tokenizer_config.json to name it: the end-of-text tokens of the
// supported families, in this order.
constexpr const char* kEosFallbacks[] = {"<|endoftext|>", "<|end_of_text|>",
                                         "<\xEF\xBD\x9C"
                                         "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                         "</s>"};

}  // namespace

HfTokenizer::HfTokenizer(HfTokenizerParts parts) : p_(std::move(parts)) {
  std::vector<AddedToken> raw, normalized;
  int32_t max_id = p_.model.max_id();
  for (size_t i = 0; i < p_.added_tokens.size(); ++i) {
    AddedToken t = p_.added_tokens[i];
    added_by_id_[t.id] = i;
    max_id = std::max(max_id, t.id);
    if (t.normalized && !p_.normalizer.empty()) {
      t.content = p_.normalizer.normalize(t.content);
      normalized.push_back(std::move(t));
    } else if (t.normalized) {
      normalized.push_back(std::move(t));
    } else {
      raw.push_back(std::move(t));
    }
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
  vocab_size_ = max_id + 1;
  auto find = [&](const std::string& s) { return s.empty() ? std::nullopt : special_id(s); };
  if (auto id = find(p_.eos_token)) {
    eos_id_ = *id;
  } else {
    for (const char* name : kEosFallbacks)
      if (auto fid = special_id(name)) {
        eos_id_ = *fid;
        break;
      }
  }
  pad_id_ = find(p_.pad_token).value_or(eos_id_);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool parse_special,
                                         bool add_special_tokens) const {
  std::vector<int32_t> ids = encode_where(text, [parse_special](size_t, size_t) { return parse_special; });
  return add_special_tokens ? p_.post_processor.apply_single(ids) : ids;
}

std::vector<int32_t> HfTokenizer::encode_with_special_spans(
    std::string_view text, const std::vector<std::pair<size_t, size_t>>& special_spans) const {
  return encode_where(text, [&](size_t start, size_t stop) {
    for (const auto& [b, e] : special_spans)
      if (start >= b && stop <= e) return true;
    return false;
  });
}

std::vector<int32_t> HfTokenizer::bos_prefix() const {
  if (!p_.add_bos_token) return p_.post_processor.single_prefix();
  if (!*p_.add_bos_token || p_.bos_token.empty()) return {};
  auto id = special_id(p_.bos_token);
  return id ? std::vector<int32_t>{*id} : std::vector<int32_t>{};
}

std::string HfTokenizer::describe() const {
  return "Hugging Face byte-level BPE (" + std::to_string(vocab_size_) + " ids, " +
         std::to_string(p_.added_tokens.size()) + " added tokens)";
}

std::vector<int32_t> HfTokenizer::encode_where(
    std::string_view text, const std::function<bool(size_t, size_t)>& special_allowed) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = repair_utf8(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<TextSegment> segs;
  raw_matcher_.split(text, special_allowed, segs);
  for (const TextSegment& s : segs) {
    if (s.id >= 0)
      ids.push_back(s.id);
    else
      encode_span(text.substr(s.begin, s.end - s.begin), s.begin, special_allowed, ids);
  }
  return ids;
}

void HfTokenizer::encode_span(std::string_view span, size_t offset,
                              const std::function<bool(size_t, size_t)>& special_allowed,
                              std::vector<int32_t>& out) const {
  // Special added tokens marked `normalized` are matched after normalization, and they obey the
  // caller's rule too: untrusted text (sandbox feedback, the model's answer) must never turn
  // into a control id. Without a normalizer the offsets are the text's own; with one, the
  // special tokens of a span are allowed only where the whole span is.
  if (p_.normalizer.empty()) {
    encode_normalized(
        span, [&](size_t b, size_t e) { return special_allowed(offset + b, offset + e); }, out);
    return;
  }
  const bool allowed = special_allowed(offset, offset + span.size());
  const std::string norm = p_.normalizer.normalize(span);
  encode_normalized(norm, [allowed](size_t, size_t) { return allowed; }, out);
}

void HfTokenizer::encode_normalized(std::string_view text,
                                    const std::function<bool(size_t, size_t)>& special_allowed,
                                    std::vector<int32_t>& out) const {
  std::vector<std::string> pieces;
  auto pre_tokenize = [&](std::string_view part) {
    pieces.clear();
    p_.pre_tokenizer.split(part, pieces);
    for (const std::string& piece : pieces) p_.model.encode_word(piece, out);
  };
  if (normalized_matcher_.empty()) {
    pre_tokenize(text);
    return;
  }
  // Added tokens marked `normalized` match here; special ones among them follow the same rule.
  std::vector<TextSegment> segs;
  normalized_matcher_.split(text, special_allowed, segs);
  for (const TextSegment& s : segs) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      pre_tokenize(text.substr(s.begin, s.end - s.begin));
  }
}

std::string HfTokenizer::id_to_token(int32_t id) const {
  if (auto it = added_by_id_.find(id); it != added_by_id_.end())
    return p_.added_tokens[it->second].content;
  const std::string* tok = p_.model.id_to_token(id);
  return tok ? *tok : std::string();
}

std::string HfTokenizer::token_bytes(int32_t id) const {
  if (auto it = added_by_id_.find(id); it != added_by_id_.end()) {
    const std::string& content = p_.added_tokens[it->second].content;
    std::string bytes;
    // Hugging Face passes added tokens through the decoder too: a content written wholly in the
    // byte-level alphabet is decoded by it, any other stays as written.
    if (p_.byte_level_decoder && append_bytes_of_byte_level(content, bytes)) return bytes;
    return content;
  }
  const std::string* tok = p_.model.id_to_token(id);
  if (!tok) return {};
  std::string bytes;
  if (p_.byte_level_decoder && append_bytes_of_byte_level(*tok, bytes)) return bytes;
  return *tok;
}

std::optional<int32_t> HfTokenizer::special_id(std::string_view text) const {
  for (const AddedToken& t : p_.added_tokens)
    if (t.content == text) return t.id;
  return std::nullopt;
}

}  // namespace leap::tokenizer
