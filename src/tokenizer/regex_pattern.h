// A Split pattern of tokenizer.json compiled with PCRE2 (UTF, Unicode properties, JIT).
//
// Hugging Face compiles these patterns with Oniguruma in its Ruby syntax. The two engines agree
// on the constructs these tokenizers use except where translate_oniguruma() rewrites the pattern:
//   \s, \S  Oniguruma: the Unicode White_Space property. PCRE2 with UCP also counts U+180E
//           (MONGOLIAN VOWEL SEPARATOR, no longer White_Space since Unicode 6.3), so \s becomes
//           the explicit White_Space class.
//   \h, \H  Oniguruma (Ruby): a hexadecimal digit; PCRE2: horizontal space.
//   ^, $    Ruby's anchors are always line anchors: the pattern is compiled MULTILINE.
//   \p{L}, \p{N}  Oniguruma's tables are newer than PCRE2's (Unicode 14): the letters and
//           numbers added since are appended to the class (regex_class_exceptions.inc, written by
//           tests/tokenizer/regex_class_scan.py).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace leap::tokenizer {

// The PCRE2 form of an Oniguruma (Ruby syntax) pattern, per the table above.
std::string translate_oniguruma(std::string_view pattern);

class RegexPattern {
 public:
  // Compiles translate_oniguruma(pattern); the error names the offset and PCRE2's reason.
  static Expected<RegexPattern> compile(std::string_view pattern);

  // Appends the [begin, end) byte ranges of the non-overlapping matches in text, left to right
  // (text must be valid UTF-8). An empty match matches nothing and moves on by one character.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
};

}  // namespace leap::tokenizer
