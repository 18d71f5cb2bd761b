// utf8proc does the Unicode work; ASCII text is left alone without a call, since every normal
// form maps ASCII to itself. Hugging Face's normalization tables are older than utf8proc's: the
// characters they do not know (nfc_exceptions.inc, made by tests/tokenizer/nfc_scan.py) are
// starters there, with no decomposition and class 0, so nothing reorders or composes across
// them. LEAP cuts the text at those characters and normalizes the runs between, which gives
// exactly that.
#include "tokenizer/normalizer.h"

#include <algorithm>
#include <cstdlib>

#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include "tokenizer/utf8.h"

namespace leap::tokenizer {
namespace {

struct CodeRange {
  char32_t lo, hi;
};
constexpr CodeRange kHfUnknown[] = {
#include "tokenizer/nfc_exceptions.inc"
};

bool hf_unknown(char32_t cp) {
  auto it = std::upper_bound(std::begin(kHfUnknown), std::end(kHfUnknown), cp,
                             [](char32_t c, const CodeRange& r) { return c < r.lo; });
  return it != std::begin(kHfUnknown) && cp <= std::prev(it)->hi;
}

bool is_ascii(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0x80) return false;
  return true;
}

Status parse_into(const nlohmann::json& j, const std::string& field,
                  std::vector<NormalForm>& forms) {
  if (j.is_null()) return Status::ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return invalid_input("field '" + field + "': expected an object with a string 'type'");
  const std::string type = j["type"];
  if (type == "NFC")
    forms.push_back(NormalForm::kNfc);
  else if (type == "NFD")
    forms.push_back(NormalForm::kNfd);
  else if (type == "NFKC")
    forms.push_back(NormalForm::kNfkc);
  else if (type == "NFKD")
    forms.push_back(NormalForm::kNfkd);
  else if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      return invalid_input("field '" + field + ".normalizers': expected an array");
    for (size_t i = 0; i < j["normalizers"].size(); ++i)
      LEAP_RETURN_IF_ERROR(parse_into(j["normalizers"][i],
                                      field + ".normalizers[" + std::to_string(i) + "]", forms));
  } else {
    return unsupported("field '" + field + ".type': unsupported normalizer '" + type +
                       "' (supported: NFC, NFD, NFKC, NFKD, Sequence, null)");
  }
  return Status::ok();
}

}  // namespace

Expected<Normalizer> Normalizer::from_json(const nlohmann::json& j, const std::string& field) {
  Normalizer n;
  LEAP_RETURN_IF_ERROR(parse_into(j, field, n.forms_));
  return n;
}

std::string Normalizer::normalize(std::string_view text) const {
  if (forms_.empty() || is_ascii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t run = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::max<size_t>(1, utf8_sequence_length(text, i));
    if (static_cast<unsigned char>(text[i]) >= 0x80 && hf_unknown(utf8_decode_at(text, i, n))) {
      out += normalize_run(text.substr(run, i - run));
      out.append(text.substr(i, n));
      run = i + n;
    }
    i += n;
  }
  out += normalize_run(text.substr(run));
  return out;
}

std::string Normalizer::normalize_run(std::string_view text) const {
  std::string cur(text);
  if (is_ascii(text)) return cur;
  for (NormalForm f : forms_) {
    int options = UTF8PROC_STABLE;
    switch (f) {
      case NormalForm::kNfc:
        options |= UTF8PROC_COMPOSE;
        break;
      case NormalForm::kNfd:
        options |= UTF8PROC_DECOMPOSE;
        break;
      case NormalForm::kNfkc:
        options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
        break;
      case NormalForm::kNfkd:
        options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
        break;
    }
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                            static_cast<utf8proc_ssize_t>(cur.size()), &out,
                                            static_cast<utf8proc_option_t>(options));
    if (n >= 0) cur.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);  // utf8proc_map allocates with malloc; on error the text stays as it was
  }
  return cur;
}

}  // namespace leap::tokenizer
