// Tokenizer interface. The sampler needs only this: text <-> ids, the bytes of one token (for
// incremental stop-string matching) and the special ids. A Hugging Face tokenizer.json BPE
// implements the same interface later; ByteTokenizer (byte_tokenizer.h) is the one the
// project's small policies use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace leap::model {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int vocab_size() const = 0;
  // Encodes text. With allow_special, special-token strings in the text (e.g. "<|eos|>") become
  // their ids; without, they are encoded as ordinary text (safe for untrusted text).
  virtual std::vector<int32_t> encode(std::string_view text, bool allow_special) const = 0;
  // The bytes a token stands for (a special token's string for specials).
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual std::string decode(std::span<const int32_t> ids) const {
    std::string out;
    for (int32_t id : ids) out += token_bytes(id);
    return out;
  }
  // Id of a special token by its string ("<|eos|>"), if the vocabulary has it.
  virtual std::optional<int32_t> special_id(std::string_view text) const = 0;
  virtual int32_t eos_id() const = 0;
  virtual int32_t pad_id() const = 0;
};

}  // namespace leap::model
