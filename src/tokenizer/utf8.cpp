// UTF-8 decoding by the table of RFC 3629 section 4: the second byte's range depends on the first.
#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

bool in(unsigned char c, unsigned lo, unsigned hi) {
  return c >= lo && c <= hi;
}

// Expected total length of a sequence led by `lead`, 0 for bytes that never lead one.
size_t lead_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (in(lead, 0xC2, 0xDF)) return 2;
  if (in(lead, 0xE0, 0xEF)) return 3;
  if (in(lead, 0xF0, 0xF4)) return 4;
  return 0;
}

// The allowed range of the byte after `lead` (the others are always 80..BF).
void second_range(unsigned char lead, unsigned& lo, unsigned& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead == 0xE0)
    lo = 0xA0;  // no overlong 3-byte forms
  else if (lead == 0xED)
    hi = 0x9F;  // no surrogates
  else if (lead == 0xF0)
    lo = 0x90;  // no overlong 4-byte forms
  else if (lead == 0xF4)
    hi = 0x8F;  // nothing past U+10FFFF
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t n = lead_length(lead);
  if (n <= 1 || i + n > text.size()) return n == 1 ? 1 : 0;
  unsigned lo, hi;
  second_range(lead, lo, hi);
  if (!in(static_cast<unsigned char>(text[i + 1]), lo, hi)) return 0;
  for (size_t k = 2; k < n; ++k)
    if (!in(static_cast<unsigned char>(text[i + k]), 0x80, 0xBF)) return 0;
  return n;
}

char32_t utf8_decode_at(std::string_view text, size_t i, size_t len) {
  const auto b = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[i + k]));
  };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

// The bytes at i that begin a sequence but do not complete one (Unicode's "maximal subpart of an
// ill-formed subsequence"): the lead and the continuation bytes its table allows, up to the first
// byte that breaks it or the end. At least 1.
size_t ill_formed_length(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t n = lead_length(lead);
  if (n < 2) return 1;
  unsigned lo, hi;
  second_range(lead, lo, hi);
  size_t k = 1;
  while (k < n && i + k < text.size() && in(static_cast<unsigned char>(text[i + k]), lo, hi)) {
    ++k;
    lo = 0x80;
    hi = 0xBF;
  }
  return k;
}

}  // namespace

std::string repair_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      // One U+FFFD per maximal ill-formed subpart, as Python's errors="replace" and Rust's
      // from_utf8_lossy (Hugging Face's decode) give: an answer cut inside a character by
      // max_new_tokens ends in one replacement character, not one per byte.
      out += "\xEF\xBF\xBD";
      i += ill_formed_length(text, i);
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if (in(c, 0x80, 0xBF)) continue;  // a continuation byte: keep looking for its lead
    const size_t n = lead_length(c);
    if (n <= back) return 0;  // ASCII, a complete sequence, or a byte that leads nothing
    // Check that the bytes present could still start a valid sequence.
    std::string_view tail = text.substr(text.size() - back);
    unsigned lo, hi;
    second_range(c, lo, hi);
    if (back >= 2 && !in(static_cast<unsigned char>(tail[1]), lo, hi)) return 0;
    return back;
  }
  return 0;
}

}  // namespace leap::tokenizer
