// Pre-tokenizers of tokenizer.json: Split (a regex or a literal string, with the five delimiter
// behaviours and invert), ByteLevel (optional prefix space, optional GPT-2 regex, then the
// byte-level alphabet) and Sequence (flattened at load time). Each step is applied to every
// piece the previous steps produced, as Hugging Face's PreTokenizedString does: so ByteLevel's
// prefix space, when on, is added to each piece that does not start with a space.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "tokenizer/regex_pattern.h"

namespace leap::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value (null: no steps); `field` names it in errors.
  static Expected<PreTokenizer> from_json(const nlohmann::json& j, const std::string& field);

  // Appends the pieces of text (valid UTF-8) to `pieces`; with no steps, text is one piece.
  void split(std::string_view text, std::vector<std::string>& pieces) const;

  // True when some step maps pieces to the byte-level alphabet.
  bool byte_level() const;

 private:
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
    RegexPattern regex;   // kSplit with a regex pattern
    std::string literal;  // kSplit with a string pattern (regex unused)
    bool is_regex = false;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;  // kByteLevel
    bool use_regex = false;         // kByteLevel: split with GPT-2's pattern first
  };
  static Status parse_into(const nlohmann::json& j, const std::string& field,
                           std::vector<Step>& steps);
  static void apply_split(const Step& s, std::string_view piece, std::vector<std::string>& out);
  void apply_byte_level(const Step& s, std::string_view piece, std::vector<std::string>& out) const;

  std::vector<Step> steps_;
  RegexPattern gpt2_;  // compiled when a ByteLevel step has use_regex
};

}  // namespace leap::tokenizer
