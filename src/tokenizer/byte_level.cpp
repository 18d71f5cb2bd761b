// The 256-entry table is built once from the rule in byte_level.h; the reverse map covers the
// code points below 0x144 (the largest the rule produces is U+0143).
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

constexpr char32_t kNoByte = 0xFFFFFFFF;
constexpr size_t kReverseSize = 0x144;

struct Tables {
  std::array<std::string, 256> encoded;       // byte -> its character in UTF-8
  std::array<uint32_t, kReverseSize> decode;  // code point -> byte, or kNoByte
  Tables() {
    decode.fill(kNoByte);
    char32_t next_extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : next_extra++;
      utf8_append(encoded[b], cp);
      decode[cp] = static_cast<uint32_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

}  // namespace

void append_byte_level(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (unsigned char b : bytes) out += t.encoded[b];
}

bool append_bytes_of_byte_level(std::string_view chars, std::string& out) {
  const Tables& t = tables();
  const size_t start = out.size();
  for (size_t i = 0; i < chars.size();) {
    const size_t n = utf8_sequence_length(chars, i);
    const char32_t cp = n ? utf8_decode_at(chars, i, n) : kNoByte;
    if (cp >= kReverseSize || t.decode[cp] == kNoByte) {
      out.resize(start);
      return false;
    }
    out += static_cast<char>(t.decode[cp]);
    i += n;
  }
  return true;
}

}  // namespace leap::tokenizer
