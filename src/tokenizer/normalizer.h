// Normalizers of tokenizer.json: the Unicode normal forms (NFC, NFD, NFKC, NFKD, from utf8proc)
// and sequences of them. A Sequence is flattened at load time into its list of forms, applied in
// order; null is the empty list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace leap::tokenizer {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

class Normalizer {
 public:
  // Parses the "normalizer" value; `field` names it in errors ("normalizer.normalizers[1]").
  static Expected<Normalizer> from_json(const nlohmann::json& j, const std::string& field);

  bool empty() const { return forms_.empty(); }
  // text must be valid UTF-8.
  std::string normalize(std::string_view text) const;

 private:
  std::string normalize_run(std::string_view text) const;  // text holds no HF-unknown character
  std::vector<NormalForm> forms_;
};

}  // namespace leap::tokenizer
