// HfTokenizer: a Hugging Face tokenizer.json (byte-level BPE: the Qwen2/2.5/3, Llama-3.x and
// DeepSeek-Coder families) behind LEAP's Tokenizer interface. encode() gives the ids that the
// `tokenizers` package gives for `encode(text, add_special_tokens=False)`, with special-token
// strings parsed (allow_special) or kept as plain text (`encode_special_tokens = True`, the safe
// mode for text from the sandbox or the model).
//
// The pipeline is Hugging Face's: added tokens are cut out of the raw text; the rest is
// normalized, cut again by the added tokens marked `normalized`, pre-tokenized span by span (a
// skipped special string stays inside its span, so the pre-tokenizer sees the whole span) and
// each piece is BPE-encoded. Text that is not valid UTF-8 is first repaired (each bad byte
// becomes U+FFFD), since the `tokenizers` package only ever sees Python strings.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "model/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace leap::tokenizer {

struct HfTokenizerParts {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  PostProcessor post_processor;
  std::vector<AddedToken> added_tokens;
  bool byte_level_decoder = false;
  std::string eos_token;  // from tokenizer_config.json when present
  std::string pad_token;
  std::string bos_token;
  // tokenizer_config.json's add_bos_token when it has one: transformers' Llama fast tokenizer
  // rebuilds its post-processor from it, so it overrides tokenizer.json's template.
  std::optional<bool> add_bos_token;
};

class HfTokenizer final : public model::Tokenizer {
 public:
  explicit HfTokenizer(HfTokenizerParts parts);

  int vocab_size() const override { return vocab_size_; }
  std::vector<int32_t> encode(std::string_view text, bool allow_special) const override {
    return encode(text, allow_special, false);
  }
  // add_special_tokens applies the post-processor's single template (e.g. Llama-3's BOS).
  std::vector<int32_t> encode(std::string_view text, bool parse_special,
                              bool add_special_tokens) const;
  // One pass over the whole text (so ids at span boundaries are HF's), where special-token
  // strings become their ids only inside `special_spans` ([begin, end) byte ranges: a chat
  // template's own markers); anywhere else they are plain text.
  std::vector<int32_t> encode_with_special_spans(
      std::string_view text,
      const std::vector<std::pair<size_t, size_t>>& special_spans) const override;
  std::vector<int32_t> bos_prefix() const override;
  std::string describe() const override;
  std::string token_bytes(int32_t id) const override;
  std::optional<int32_t> special_id(std::string_view text) const override;
  int32_t eos_id() const override { return eos_id_; }
  int32_t pad_id() const override { return pad_id_; }

  // The token string as the vocab (or added tokens) writes it, e.g. "Ġthe"; "" for unused ids.
  std::string id_to_token(int32_t id) const;

 private:
  // Encodes with special tokens matched where `special_allowed(start, stop)` says so.
  std::vector<int32_t> encode_where(std::string_view text,
                                    const std::function<bool(size_t, size_t)>& special_allowed) const;
  // span starts at byte `offset` of the text special_allowed judges.
  void encode_span(std::string_view span, size_t offset,
                   const std::function<bool(size_t, size_t)>& special_allowed,
                   std::vector<int32_t>& out) const;
  void encode_normalized(std::string_view text,
                         const std::function<bool(size_t, size_t)>& special_allowed,
                         std::vector<int32_t>& out) const;

  HfTokenizerParts p_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized = false
  AddedTokenMatcher normalized_matcher_;  // the others, their content normalized
  std::unordered_map<int32_t, size_t> added_by_id_;
  int vocab_size_ = 0;
  int32_t eos_id_ = -1;
  int32_t pad_id_ = -1;
};

// Loads a tokenizer from a folder written by save_pretrained (tokenizer.json, and
// tokenizer_config.json for the EOS and pad tokens when it is there) or from a tokenizer.json
// file. Errors name the file and the field; unsupported components are kUnsupported, naming them.
Expected<std::unique_ptr<HfTokenizer>> load_hf_tokenizer(const std::string& path);

}  // namespace leap::tokenizer
