// Post-processors of tokenizer.json, for encode with add_special_tokens: TemplateProcessing (its
// "single" template: special tokens around the sequence $A), ByteLevel (offsets only, so nothing
// to do on ids) and Sequence of them. Pair templates are not used by LEAP and are not applied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace leap::tokenizer {

class PostProcessor {
 public:
  static Expected<PostProcessor> from_json(const nlohmann::json& j, const std::string& field);
  // The ids the single template makes of `ids` (unchanged without a template).
  std::vector<int32_t> apply_single(const std::vector<int32_t>& ids) const;
  // The special ids the single template puts before $A (Llama-3's BOS); empty without one.
  std::vector<int32_t> single_prefix() const;

 private:
  struct Piece {
    bool is_sequence = false;      // $A
    std::vector<int32_t> special;  // the special token's ids otherwise
  };
  static Status parse_into(const nlohmann::json& j, const std::string& field, PostProcessor& p);
  std::vector<Piece> single_;
  bool has_template_ = false;
};

}  // namespace leap::tokenizer
