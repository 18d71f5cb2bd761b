// UTF-8 helpers for the tokenizer: one code point at a time, and a repair pass that makes any
// byte string valid UTF-8 (each invalid byte becomes U+FFFD, as Python's errors="replace" does
// for a single bad byte), because every later stage (NFC, the regex, BPE) assumes valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace leap::tokenizer {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when the bytes there are not one.
size_t utf8_sequence_length(std::string_view text, size_t i);

// Decodes the valid sequence at text[i] (caller checked utf8_sequence_length > 0).
char32_t utf8_decode_at(std::string_view text, size_t i, size_t len);

// Appends the UTF-8 encoding of cp.
void utf8_append(std::string& out, char32_t cp);

// True when text is valid UTF-8 (no surrogates, no overlongs, nothing past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// text with each maximal ill-formed subsequence (a byte that cannot start a character, or a
// character's valid first bytes cut short) replaced by one U+FFFD, as Python and Rust decode.
std::string repair_utf8(std::string_view text);

// How many bytes at the end of text are the start of a character whose remaining bytes have not
// arrived yet (0..3). Used by incremental decoding to hold a split character back.
size_t utf8_incomplete_tail(std::string_view text);

}  // namespace leap::tokenizer
