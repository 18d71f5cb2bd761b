// PCRE2 8-bit API. Match data is made per find_all call, so one compiled pattern serves any
// number of threads.
#include "tokenizer/regex_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

// Unicode White_Space (PropList.txt), the set Oniguruma's \s matches, as a class body.
constexpr const char* kWhiteSpace =
    "\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";
constexpr const char* kHexDigit = "0-9A-Fa-f";

// Letters and numbers newer than PCRE2's Unicode 14 that Oniguruma's tables already have.
#include "tokenizer/regex_class_exceptions.inc"

}  // namespace

std::string translate_oniguruma(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 3 < p.size() && (p[i + 1] == 'p' || p[i + 1] == 'P') && p[i + 2] == '{' &&
        (p[i + 3] == 'L' || p[i + 3] == 'N') && i + 4 < p.size() && p[i + 4] == '}') {
      const bool negated = p[i + 1] == 'P';
      const std::string cls =
          std::string("\\p{") + p[i + 3] + "}" + (p[i + 3] == 'L' ? kExtraL : kExtraN);
      if (in_class && !negated)
        out += cls;
      else if (!in_class)
        out += (negated ? "[^" : "[") + cls + "]";
      else
        out.append(p.substr(i, 5));  // \P{L} inside a class: not used by these tokenizers
      i += 4;
      continue;
    }
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      const bool negated = (e == 'S' || e == 'H');
      const char* set = (e == 's' || e == 'S')   ? kWhiteSpace
                        : (e == 'h' || e == 'H') ? kHexDigit
                                                 : nullptr;
      if (set && in_class && !negated) {
        out += set;
      } else if (set && !in_class) {
        out += negated ? "[^" : "[";
        out += set;
        out += ']';
      } else {
        // Everything else (and a negated class escape inside a class, which these tokenizers
        // never use) is the same in both engines.
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal in both engines.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct RegexPattern::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Expected<RegexPattern> RegexPattern::compile(std::string_view pattern) {
  const std::string translated = translate_oniguruma(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return invalid_input("regex does not compile at offset " + std::to_string(offset) + ": " +
                         reinterpret_cast<const char*>(msg));
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  // Without JIT (a platform PCRE2 lacks it for) pcre2_match interprets the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  RegexPattern r;
  r.code_ = std::move(holder);
  return r;
}

void RegexPattern::find_all(std::string_view text,
                            std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start < text.size()) {
    // The text was checked for valid UTF-8 once, before the pipeline; skip PCRE2's own check.
    int rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    // Only "no match" ends the text. Another error (the JIT's stack or a match limit, on a long
    // run of one character class) would leave the rest as one unsplit piece: the interpreter,
    // which backtracks on the heap, tries again. Should it fail too, the rest stays one piece
    // (the text may be the policy's own, which must never stop a rank).
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
      rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] > ov[0]) {
      out.emplace_back(ov[0], ov[1]);
      start = ov[1];
    } else {
      const size_t n = utf8_sequence_length(text, ov[0]);
      start = ov[0] + (n ? n : 1);
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace leap::tokenizer
