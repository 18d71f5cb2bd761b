// The byte-level alphabet of GPT-2-style BPE: each of the 256 bytes is written as one printable
// character, so that a vocabulary of strings covers every byte sequence. Printable Latin-1 bytes
// ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 bytes take
// U+0100.. in byte order (so the space is 'Ġ', U+0120, and '\n' is 'Ċ', U+010A).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace leap::tokenizer {

// Appends the byte-level characters (UTF-8) for the bytes.
void append_byte_level(std::string_view bytes, std::string& out);

// Appends the bytes a byte-level string stands for. Returns false (appending nothing) when some
// character is not in the alphabet.
bool append_bytes_of_byte_level(std::string_view chars, std::string& out);

}  // namespace leap::tokenizer
