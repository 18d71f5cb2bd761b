// Incremental decoding for stop detection: tokens arrive one at a time and their bytes are
// released only as whole UTF-8 characters, so a character split across two tokens (an emoji's
// four bytes in two byte-level tokens) is held back until its last byte arrives, and a stop
// string is looked for in text that never ends inside a character.
#pragma once

#include <cstdint>
#include <string>

#include "model/tokenizer.h"

namespace leap::tokenizer {

class StreamDecoder {
 public:
  explicit StreamDecoder(const model::Tokenizer& tokenizer) : tok_(tokenizer) {}

  // Adds one token; returns the text that is now complete (possibly empty).
  std::string push(int32_t id);
  // Returns what is held back (an unfinished character at the end of the stream) and clears it.
  std::string flush();
  // Everything released so far.
  const std::string& text() const { return text_; }

 private:
  const model::Tokenizer& tok_;
  std::string pending_;
  std::string text_;
};

}  // namespace leap::tokenizer
