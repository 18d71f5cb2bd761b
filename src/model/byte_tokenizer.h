// ByteTokenizer: ids 0..255 are the bytes themselves; special tokens follow from 256 in the
// order given. Every string encodes losslessly, so the small policies need no learned merges.
#pragma once

#include <string>
#include <vector>

#include "model/tokenizer.h"

namespace leap::model {

class ByteTokenizer final : public Tokenizer {
 public:
  // The project's default specials: <|bos|> <|eos|> <|pad|> <|system|> <|user|> <|assistant|>.
  ByteTokenizer();
  explicit ByteTokenizer(std::vector<std::string> specials);

  int vocab_size() const override { return 256 + static_cast<int>(specials_.size()); }
  std::vector<int32_t> encode(std::string_view text, bool allow_special) const override;
  std::string token_bytes(int32_t id) const override;
  std::optional<int32_t> special_id(std::string_view text) const override;
  int32_t eos_id() const override { return eos_; }
  int32_t pad_id() const override { return pad_; }
  std::string describe() const override;

 private:
  std::vector<std::string> specials_;
  int32_t eos_ = -1;
  int32_t pad_ = 0;
};

}  // namespace leap::model
