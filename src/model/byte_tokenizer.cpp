// ByteTokenizer: bytes plus special tokens.
#include "model/byte_tokenizer.h"

#include "common/check.h"

namespace leap::model {

ByteTokenizer::ByteTokenizer()
    : ByteTokenizer({"<|bos|>", "<|eos|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>"}) {}

ByteTokenizer::ByteTokenizer(std::vector<std::string> specials) : specials_(std::move(specials)) {
  for (const auto& s : specials_) LEAP_CHECK(!s.empty(), "empty special token");
  eos_ = special_id("<|eos|>").value_or(-1);
  pad_ = special_id("<|pad|>").value_or(eos_ >= 0 ? eos_ : 0);
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    bool matched = false;
    if (allow_special && text[i] == '<') {
      for (size_t s = 0; s < specials_.size(); ++s) {
        if (text.substr(i, specials_[s].size()) == specials_[s]) {
          ids.push_back(256 + static_cast<int32_t>(s));
          i += specials_[s].size();
          matched = true;
          break;
        }
      }
    }
    if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
  }
  return ids;
}

std::string ByteTokenizer::token_bytes(int32_t id) const {
  if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
  if (id >= 256 && id < vocab_size()) return specials_[static_cast<size_t>(id - 256)];
  return {};
}

std::string ByteTokenizer::describe() const {
  return "byte-level (" + std::to_string(vocab_size()) + " ids: 256 bytes and " +
         std::to_string(specials_.size()) + " special tokens)";
}

std::optional<int32_t> ByteTokenizer::special_id(std::string_view text) const {
  for (size_t s = 0; s < specials_.size(); ++s)
    if (specials_[s] == text) return 256 + static_cast<int32_t>(s);
  return std::nullopt;
}

}  // namespace leap::model
