// Bytes that can never complete a character (a stray continuation byte, an invalid lead) are
// released at once: holding them would only delay the stop check.
#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace leap::tokenizer {

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_.token_bytes(id);
  const size_t hold = utf8_incomplete_tail(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  text_ += ready;
  return ready;
}

std::string StreamDecoder::flush() {
  std::string rest;
  rest.swap(pending_);
  text_ += rest;
  return rest;
}

}  // namespace leap::tokenizer
