// Tokenizer interface. The sampler and the prompt builder need only this: text <-> ids, the
// bytes of one token (for incremental stop-string matching), the special ids, and encoding where
// only a chat template's own markers may become special ids. Two kinds implement it:
// ByteTokenizer (byte_tokenizer.h, the project's small policies) and tokenizer::HfTokenizer (a
// Hugging Face tokenizer.json); tokenizer::load_model_tokenizer picks one by what a model folder
// holds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leap::model {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int vocab_size() const = 0;
  // Encodes text. With allow_special, special-token strings in the text (e.g. "<|eos|>") become
  // their ids; without, they are encoded as ordinary text (safe for untrusted text).
  virtual std::vector<int32_t> encode(std::string_view text, bool allow_special) const = 0;
  // One pass over `text` in which special-token strings become their ids only inside
  // `special_spans` ([begin, end) byte ranges, in order: a chat template's own markers) and are
  // plain text anywhere else. The default encodes span by span, which is exact for tokenizers
  // whose pieces never cross a span boundary (bytes).
  virtual std::vector<int32_t> encode_with_special_spans(
      std::string_view text, const std::vector<std::pair<size_t, size_t>>& special_spans) const {
    std::vector<int32_t> out;
    size_t at = 0;
    auto put = [&](size_t from, size_t to, bool special) {
      if (to <= from) return;
      auto ids = encode(text.substr(from, to - from), special);
      out.insert(out.end(), ids.begin(), ids.end());
    };
    for (const auto& [b, e] : special_spans) {
      put(at, b, false);
      put(b, e, true);
      at = e;
    }
    put(at, text.size(), false);
    return out;
  }
  // The ids encoding with add_special_tokens puts before a single text (Llama-3's BOS), as the
  // tokenizer's post-processor and tokenizer_config.json's add_bos_token say; none by default.
  virtual std::vector<int32_t> bos_prefix() const { return {}; }
  // One line for logs: the kind and the number of ids.
  virtual std::string describe() const = 0;
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
